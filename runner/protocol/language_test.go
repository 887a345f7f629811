package protocol_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

func TestParseLanguage(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]protocol.Language{
		"python": protocol.Python, "Python3": protocol.Python, " py ": protocol.Python,
		"node": protocol.Node, "js": protocol.Node, "JavaScript": protocol.Node, "nodejs": protocol.Node,
		"bash": protocol.Bash, "sh": protocol.Bash,
	} {
		if got, err := protocol.ParseLanguage(in); err != nil || got != want {
			t.Errorf("ParseLanguage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ruby", "python2", "c"} {
		_, err := protocol.ParseLanguage(in)
		if protocol.CodeOf(err) != protocol.CodeInvalid || !strings.Contains(err.Error(), protocol.LanguageNames()) {
			t.Errorf("ParseLanguage(%q): %v; want CodeInvalid listing %s", in, err, protocol.LanguageNames())
		}
	}
}
