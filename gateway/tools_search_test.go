package gateway_test

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// searchCodeOut mirrors search_code's structuredContent as documented.
type searchCodeOut struct {
	Hits []struct {
		Path    string  `json:"path"`
		Line    int     `json:"line"`
		EndLine int     `json:"end_line"`
		Symbol  string  `json:"symbol"`
		Kind    string  `json:"kind"`
		Fused   float64 `json:"fused_score"`
		Ranks   []struct {
			Strategy string `json:"strategy"`
			Rank     int    `json:"rank"`
		} `json:"ranks"`
	} `json:"hits"`
	Strategies []struct {
		Strategy    string `json:"strategy"`
		Ran         bool   `json:"ran"`
		Hits        int    `json:"hits"`
		Skipped     string `json:"skipped"`
		Unavailable string `json:"unavailable"`
		Error       string `json:"error"`
	} `json:"strategies"`
}

// strategy returns what one strategy did, by name.
func (o searchCodeOut) strategy(name string) (ran bool, hits int, why string) {
	for _, s := range o.Strategies {
		if s.Strategy == name {
			return s.Ran, s.Hits, s.Skipped + s.Unavailable + s.Error
		}
	}
	return false, 0, "not reported"
}

// searchFixture is a small project written through write_file.
var searchFixture = map[string]string{
	"svc/verify.go": "package svc\n\n// VerifyChain checks that each record's hash chains to the previous one.\nfunc VerifyChain(path string) error {\n\treturn nil\n}\n",
	"svc/store.go":  "package svc\n\n// Store keeps records.\ntype Store struct{}\n\nfunc (s *Store) Put(k string) error { return nil }\n",
	"web/app.py":    "class Upload:\n    def retry_upload(self, item):\n        return item\n",
}

func writeSearchFixture(t *testing.T, c *client.Client) {
	t.Helper()
	for path, content := range searchFixture {
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": path, "content": content}))
	}
}

// TestLocalSearchCode: search_code runs the strategies that apply, fuses
// them, says which found each hit, and reports what it skipped and why.
func TestLocalSearchCode(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	writeSearchFixture(t, c)

	out := structuredAs[searchCodeOut](t, mustOK(t, "search_code", call(t, c, "search_code", map[string]any{"query": "where is the hash chain verified"})))
	if len(out.Hits) == 0 || !strings.HasSuffix(out.Hits[0].Path, "svc/verify.go") || out.Hits[0].Symbol != "VerifyChain" ||
		out.Hits[0].Ranks[0].Strategy != "lexical" || out.Hits[0].Ranks[0].Rank != 1 {
		t.Fatalf("words: %+v", out.Hits)
	}
	if ran, _, why := out.strategy("structural"); ran || !strings.Contains(why, "metavariable") {
		t.Errorf("structural for a query of words: ran %v, %q", ran, why)
	}
	if ran, _, _ := out.strategy("text"); !ran {
		t.Errorf("text did not run for a valid regular expression")
	}
	if _, _, why := out.strategy("semantic"); !strings.Contains(why, "embedding") {
		t.Errorf("semantic skipped for %q, want the missing embedding backend named", why)
	}

	// An identifier: the lexical definition and the regex's line in it
	// are one fused hit, found by both.
	res := mustOK(t, "search_code", call(t, c, "search_code", map[string]any{"query": "VerifyChain"}))
	out = structuredAs[searchCodeOut](t, res)
	if len(out.Hits) == 0 || out.Hits[0].Symbol != "VerifyChain" || len(out.Hits[0].Ranks) != 2 {
		t.Fatalf("identifier: %+v", out.Hits)
	}
	if !strings.Contains(text(res), "VerifyChain (function) [lexical #1, text #") {
		t.Errorf("text content does not name the strategies and ranks: %s", text(res))
	}

	// A pattern runs structural: with ast-grep it finds the functions,
	// without it the result says what is missing and which image has it.
	out = structuredAs[searchCodeOut](t, mustOK(t, "search_code", call(t, c, "search_code", map[string]any{"query": "func $NAME($$$) error", "max_results": 1})))
	ran, hits, why := out.strategy("structural")
	if !ran || (hits == 0 && !strings.Contains(why, "sandgate/base")) || len(out.Hits) != 1 {
		t.Errorf("pattern: structural ran %v with %d hits (%q); %d fused hits, want 1", ran, hits, why, len(out.Hits))
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": " "}, "query is empty"},
		{map[string]any{"query": "x", "strategies": []any{"semantic"}}, "embedding"},
		{map[string]any{"query": "x", "strategies": []any{"vector"}}, "unknown search strategy"},
		{map[string]any{"query": "x", "path": "nope"}, "no strategy answered"},
	} {
		if res := call(t, c, "search_code", tc.args); !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("search_code %v: %q, want an error containing %q", tc.args, text(res), tc.want)
		}
	}
}

// TestSearchCodeDocker: in sandgate/base, which must carry ast-grep, the
// structural strategy runs for real and its hits fuse with the lexical
// ones.
func TestSearchCodeDocker(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireImage(t, testImage)
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	writeSearchFixture(t, c)
	out := structuredAs[searchCodeOut](t, mustOK(t, "search_code", call(t, c, "search_code",
		map[string]any{"query": "func ($R *Store) $NAME($$$) error", "strategies": []any{"structural", "lexical"}})))
	if ran, hits, why := out.strategy("structural"); !ran || hits != 1 || why != "" {
		t.Fatalf("structural in %s: ran %v, %d hits, %q", testImage, ran, hits, why)
	}
	if len(out.Hits) == 0 || !strings.HasSuffix(out.Hits[0].Path, "svc/store.go") || out.Hits[0].Line != 6 {
		t.Fatalf("hits: %+v", out.Hits)
	}
	out = structuredAs[searchCodeOut](t, mustOK(t, "search_code", call(t, c, "search_code",
		map[string]any{"query": "def $F(self, $$$)", "lang": "python"})))
	if len(out.Hits) == 0 || !strings.HasSuffix(out.Hits[0].Path, "web/app.py") || out.Hits[0].Line != 2 {
		t.Fatalf("python pattern: %+v", out.Hits)
	}
}
