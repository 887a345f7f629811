package gateway_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandgate/sandgate/gateway/audit"
)

// TestLocalAuditMultiByteSummaries: calls whose summarised arguments are
// longer than the summary's cut and made of multi-byte characters (the
// report: run_shell of "echo " and 80 "€", read_file of a path of many
// "é"; shifted by a byte or two so that every cut falls inside a
// character once) leave a log that verifies, and each summary is a prefix
// of the argument cut on a character boundary, not one ending in half a
// character.
func TestLocalAuditMultiByteSummaries(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	want := map[string]bool{} // summarised argument → seen in a tool.start and a tool.end
	for _, pad := range []string{"", " ", "  "} {
		command := "echo " + pad + strings.Repeat("€", 80)
		mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": command}))
		path := pad + strings.Repeat("é", 150) + ".txt"
		if res := call(t, c, "read_file", map[string]any{"path": path}); !res.IsError {
			t.Fatalf("read_file of a missing file: %s", text(res))
		}
		want[command], want[path] = false, false
	}
	if rep, err := audit.VerifyFile(tg.AuditPath); err != nil || !rep.OK() {
		t.Fatalf("audit chain after multi-byte summaries: %+v %v", rep, err)
	}
	seen := 0
	for _, e := range auditRecords(t, tg.AuditPath) {
		got, ok := e.Summary[map[string]string{"run_shell": "command", "read_file": "path"}[e.Tool]]
		if !ok || e.Kind == audit.KindToolDenied {
			continue
		}
		seen++
		prefix, cutOff := strings.CutSuffix(got, "…")
		matched := false
		for arg := range want {
			matched = matched || strings.HasPrefix(arg, prefix) && len(prefix) >= 197
		}
		if !cutOff || !utf8.ValidString(got) || !matched {
			t.Errorf("%s %s summary %q: want a prefix of the argument of about 200 bytes, cut on a character boundary, then …", e.Kind, e.Tool, got)
		}
		if !utf8.ValidString(e.Error) {
			t.Errorf("%s error text is not valid UTF-8: %q", e.Tool, e.Error)
		}
	}
	if seen != 4*len(want)/2 {
		t.Errorf("found %d tool.start/tool.end records of the calls, want %d", seen, 4*len(want)/2)
	}
}
