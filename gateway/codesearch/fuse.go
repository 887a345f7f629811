package codesearch

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Rank is where one strategy placed a fused hit (1 is first).
type Rank struct {
	Strategy protocol.SearchStrategy `json:"strategy"`
	Rank     int                     `json:"rank"`
}

// Hit is one fused result.
type Hit struct {
	protocol.CodeHit
	Fused float64 `json:"fused_score"` // Σ 1/(k + rank) over Ranks
	Ranks []Rank  `json:"ranks"`       // in protocol.SearchStrategies order
}

// Fuse merges the strategies' rankings by reciprocal rank fusion: a hit's
// score is the sum, over the strategies that found it, of 1/(k + rank).
// Hits are keyed by file and line, and a hit inside the span of one
// already keyed (a definition the lexical strategy found, a function a
// pattern matched) joins that span, so a regex line inside a function
// and the function itself count as one place. Lists are taken in
// protocol.SearchStrategies order, so lexical definitions anchor first;
// a strategy counts once per hit, at its best rank. The best limit hits
// are returned, ties broken by best rank, then path and line.
func Fuse(k int, lists []protocol.CodeSearchResult, limit int) []Hit {
	lists = slices.Clone(lists)
	slices.SortStableFunc(lists, func(a, b protocol.CodeSearchResult) int {
		return slices.Index(protocol.SearchStrategies, a.Strategy) - slices.Index(protocol.SearchStrategies, b.Strategy)
	})
	var hits []*Hit
	byFile := map[string][]*Hit{}
	for _, l := range lists {
		for i, h := range l.Hits {
			f := anchor(byFile[h.Path], h.Line)
			if f == nil {
				f = &Hit{CodeHit: h}
				f.Score = 0
				hits = append(hits, f)
				byFile[h.Path] = append(byFile[h.Path], f)
			}
			if f.Symbol == "" && h.Symbol != "" {
				f.Symbol, f.Kind = h.Symbol, h.Kind
			}
			if n := len(f.Ranks); n > 0 && f.Ranks[n-1].Strategy == l.Strategy {
				continue // a better-ranked hit of this strategy is already here
			}
			f.Ranks = append(f.Ranks, Rank{Strategy: l.Strategy, Rank: i + 1})
			f.Fused += 1 / float64(k+i+1)
		}
	}
	slices.SortStableFunc(hits, func(a, b *Hit) int {
		if a.Fused != b.Fused {
			return cmp.Compare(b.Fused, a.Fused)
		}
		if c := cmp.Compare(bestRank(a), bestRank(b)); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
	out := make([]Hit, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, *h)
	}
	return out
}

// anchor returns the hit of a file whose line is line or whose span
// holds it, the narrowest span if several do.
func anchor(in []*Hit, line int) *Hit {
	var best *Hit
	for _, h := range in {
		end := max(h.EndLine, h.Line)
		if line < h.Line || line > end {
			continue
		}
		if best == nil || end-h.Line < max(best.EndLine, best.Line)-best.Line {
			best = h
		}
	}
	return best
}

func bestRank(h *Hit) int {
	best := int(^uint(0) >> 1)
	for _, r := range h.Ranks {
		best = min(best, r.Rank)
	}
	return best
}

// String renders a hit's ranks as "lexical #1, text #3".
func (h Hit) String() string {
	s := ""
	for i, r := range h.Ranks {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s #%d", r.Strategy, r.Rank)
	}
	return s
}
