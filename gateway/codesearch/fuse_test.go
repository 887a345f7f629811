package codesearch_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/codesearch"
	"github.com/sandgate/sandgate/runner/protocol"
)

func list(s protocol.SearchStrategy, hits ...protocol.CodeHit) protocol.CodeSearchResult {
	return protocol.CodeSearchResult{Strategy: s, Hits: hits}
}

func at(path string, line, end int) protocol.CodeHit {
	return protocol.CodeHit{Path: path, Line: line, EndLine: end}
}

func render(hits []codesearch.Hit) string {
	var parts []string
	for _, h := range hits {
		parts = append(parts, fmt.Sprintf("%s:%d [%s]", h.Path, h.Line, h.String()))
	}
	return strings.Join(parts, " | ")
}

func TestFuse(t *testing.T) {
	t.Parallel()
	lex, st, txt := protocol.StrategyLexical, protocol.StrategyStructural, protocol.StrategyText
	for _, tc := range []struct {
		name  string
		lists []protocol.CodeSearchResult
		limit int
		want  string
	}{
		{"one list keeps its order", []protocol.CodeSearchResult{list(lex, at("a", 1, 9), at("b", 1, 0))}, 10,
			"a:1 [lexical #1] | b:1 [lexical #2]"},
		{"agreement wins over one first place",
			[]protocol.CodeSearchResult{list(lex, at("a", 1, 0), at("b", 1, 0)), list(txt, at("c", 1, 0), at("b", 1, 0))}, 10,
			"b:1 [lexical #2, text #2] | a:1 [lexical #1] | c:1 [text #1]"},
		{"a line inside a lexical span joins it",
			[]protocol.CodeSearchResult{list(txt, at("a", 5, 0)), list(lex, at("a", 3, 8), at("b", 1, 0))}, 10,
			"a:3 [lexical #1, text #1] | b:1 [lexical #2]"},
		{"the narrowest span holds the line",
			[]protocol.CodeSearchResult{list(lex, at("a", 10, 12)), list(st, at("a", 1, 20)), list(txt, at("a", 11, 0))}, 10,
			"a:10 [lexical #1, text #1] | a:1 [structural #1]"},
		{"a strategy counts once per hit, at its best rank",
			[]protocol.CodeSearchResult{list(lex, at("a", 1, 9)), list(txt, at("b", 1, 0), at("a", 2, 0), at("a", 3, 0))}, 10,
			"a:1 [lexical #1, text #2] | b:1 [text #1]"},
		{"limit", []protocol.CodeSearchResult{list(lex, at("a", 1, 0), at("b", 1, 0), at("c", 1, 0))}, 2,
			"a:1 [lexical #1] | b:1 [lexical #2]"},
		{"ties by best rank then place",
			[]protocol.CodeSearchResult{list(lex, at("z", 1, 0)), list(txt, at("y", 1, 0))}, 10,
			"y:1 [text #1] | z:1 [lexical #1]"},
		{"nothing", nil, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := render(codesearch.Fuse(60, tc.lists, tc.limit)); got != tc.want {
				t.Errorf("Fuse:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestFuseScore(t *testing.T) {
	t.Parallel()
	hits := codesearch.Fuse(60, []protocol.CodeSearchResult{
		list(protocol.StrategyLexical, at("a", 1, 0), at("b", 1, 0)),
		list(protocol.StrategyText, at("b", 1, 0)),
	}, 10)
	if want := 1.0/62 + 1.0/61; math.Abs(hits[0].Fused-want) > 1e-12 {
		t.Errorf("score of b = %v, want 1/62 + 1/61 = %v", hits[0].Fused, want)
	}
}

// strategy is a Strategy that only has a name: Select never searches.
type strategy protocol.SearchStrategy

func (s strategy) Name() protocol.SearchStrategy { return protocol.SearchStrategy(s) }
func (s strategy) Search(context.Context, codesearch.Query) (protocol.CodeSearchResult, error) {
	return protocol.CodeSearchResult{}, nil
}

func TestSelect(t *testing.T) {
	t.Parallel()
	builtin := []codesearch.Strategy{strategy(protocol.StrategyLexical), strategy(protocol.StrategyStructural), strategy(protocol.StrategyText)}
	for _, tc := range []struct {
		query string
		asked []protocol.SearchStrategy
		want  string
	}{
		{"where is the audit hash chain verified", nil, "lexical text"},
		{"MaxFrameBytes", nil, "lexical text"},
		{"func $NAME($$$) error", nil, "lexical structural text"},
		{"conn.SetReadLimit(MaxFrameBytes)", nil, "lexical structural text"},
		{"x := $Y", nil, "lexical structural text"},
		{"$$$", nil, "lexical structural text"}, // three end anchors: a valid regex
		{`func \w+\(`, nil, "lexical text"},
		{"unclosed (", nil, "lexical structural"},
		{"anything", []protocol.SearchStrategy{protocol.StrategyStructural}, "structural"},
	} {
		run, skipped, err := codesearch.Select(tc.query, tc.asked, builtin)
		if err != nil {
			t.Fatalf("Select(%q): %v", tc.query, err)
		}
		var names []string
		for _, s := range run {
			names = append(names, string(s.Name()))
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("Select(%q, %v) = %s, want %s", tc.query, tc.asked, got, tc.want)
		}
		if !strings.Contains(skipped[protocol.StrategySemantic], "embedding") && tc.asked == nil {
			t.Errorf("Select(%q): semantic skipped for %q, want a reason naming the missing embedding backend", tc.query, skipped[protocol.StrategySemantic])
		}
	}
	if _, _, err := codesearch.Select("x", []protocol.SearchStrategy{protocol.StrategySemantic}, builtin); err == nil ||
		!strings.Contains(err.Error(), "embedding") {
		t.Errorf("asking for semantic without a backend: err %v, want one naming the embedding backend", err)
	}
	run, _, _ := codesearch.Select("x", nil, append(builtin, strategy(protocol.StrategySemantic)))
	if len(run) != 3 || run[2].Name() != protocol.StrategySemantic {
		t.Errorf("a semantic backend, when given, runs by default: %v", run)
	}
}
