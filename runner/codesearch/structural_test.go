package codesearch_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/codesearch"
	"github.com/sandgate/sandgate/runner/protocol"
)

var structuralFixture = map[string]string{
	"a.go": `package a

func Open(name string) error { return nil }

func count() int { return 0 }

func (s *S) Close() error {
	return nil
}
`,
	"b.py": "def load(path):\n    return open(path)\n\nclass Cache:\n    def get(self, key):\n        return None\n",
	"c.ts": "export function send(msg: string): void {}\nconst x = await fetch(url)\n",
}

// requireAstGrep skips when ast-grep is not on this host. The runner's
// unit tests run on the host, where it is optional; the structural
// strategy is tested for real against sandgate/base, which must carry
// it, by the gateway's TestSearchCodeDocker (which fails under CI).
func requireAstGrep(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ast-grep"); err != nil {
		t.Skip("ast-grep is not installed on this host (install it with images/base/install.sh, or `npm i -g @ast-grep/cli`); " +
			"the structural strategy is tested in sandgate/base by gateway TestSearchCodeDocker")
	}
}

func structural(t *testing.T, ws string, req protocol.CodeSearchRequest, opts codesearch.Options) protocol.CodeSearchResult {
	t.Helper()
	req.Strategy = protocol.StrategyStructural
	opts.Workspace = ws
	res, err := codesearch.New(opts).Search(t.Context(), req)
	if err != nil {
		t.Fatalf("Search(%q): %v", req.Query, err)
	}
	return res
}

func TestStructural(t *testing.T) {
	t.Parallel()
	requireAstGrep(t)
	ws := t.TempDir()
	writeTree(t, ws, structuralFixture)
	for _, tc := range []struct {
		pattern, lang string
		want          []string // rel:line symbol
	}{
		{"func $NAME($$$) error", "go", []string{"a.go:3 Open"}},
		{"func ($R $T) $NAME($$$) error { $$$ }", "go", []string{"a.go:7 Close"}},
		{"def $NAME($$$): $$$", "python", []string{"b.py:1 load", "b.py:5 get"}},
		{"await fetch($URL)", "typescript", []string{"c.ts:2 "}},
		{"return nil", "", []string{"a.go:3 ", "a.go:8 "}},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			t.Parallel()
			res := structural(t, ws, protocol.CodeSearchRequest{Query: tc.pattern, Lang: tc.lang}, codesearch.Options{})
			var got []string
			for _, h := range res.Hits {
				rel, _ := filepath.Rel(ws, h.Path)
				got = append(got, rel+":"+strconv.Itoa(h.Line)+" "+h.Symbol)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("hits %q, want %q (result %+v)", got, tc.want, res)
			}
		})
	}
	t.Run("bad pattern", func(t *testing.T) {
		res := structural(t, ws, protocol.CodeSearchRequest{Query: "x := ", Lang: "go"}, codesearch.Options{})
		if len(res.Hits) != 0 || res.Note == "" {
			t.Errorf("a pattern with a syntax error: %+v, want no hits and a note", res)
		}
	})
	t.Run("bad lang", func(t *testing.T) {
		_, err := codesearch.New(codesearch.Options{Workspace: ws}).Search(t.Context(),
			protocol.CodeSearchRequest{Strategy: protocol.StrategyStructural, Query: "x", Lang: "cobol"})
		if err == nil || !strings.Contains(err.Error(), "cobol") {
			t.Errorf("lang cobol: err %v, want one naming it", err)
		}
	})
	t.Run("max results", func(t *testing.T) {
		res := structural(t, ws, protocol.CodeSearchRequest{Query: "return $X", MaxResults: 1}, codesearch.Options{})
		if len(res.Hits) != 1 || !res.Truncated {
			t.Errorf("max_results 1: %d hits, truncated %v", len(res.Hits), res.Truncated)
		}
	})
}

// TestStructuralUnavailable runs everywhere: an image without ast-grep
// gets a result that says what is missing and where it is, not an error.
func TestStructuralUnavailable(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTree(t, ws, structuralFixture)
	res := structural(t, ws, protocol.CodeSearchRequest{Query: "func $NAME($$$) error"},
		codesearch.Options{AstGrep: filepath.Join(ws, "no-such-ast-grep")})
	if len(res.Hits) != 0 || !strings.Contains(res.Unavailable, "ast-grep") || !strings.Contains(res.Unavailable, "sandgate/base") {
		t.Errorf("without ast-grep: %+v, want Unavailable naming ast-grep and sandgate/base", res)
	}
}
