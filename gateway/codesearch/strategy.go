// Package codesearch runs search_code's strategies and fuses their
// rankings by reciprocal rank fusion. The strategies that read the
// sandbox's files run in its runner (runner/codesearch, file.search);
// this package knows them only through the Strategy interface, which an
// embedding backend implements too (none is built in: semantic search
// needs model weights, which are not part of the images).
package codesearch

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Query is one search as every strategy sees it.
type Query struct {
	Text  string
	Path  string // default: the workspace
	Glob  string // base-name filter
	Lang  string // structural: the pattern's language; "" infers it per file
	Limit int    // candidates each strategy returns
}

// Strategy is one way of ranking code for a query.
type Strategy interface {
	// Name is the strategy's name in requests and results.
	Name() protocol.SearchStrategy
	// Search returns the strategy's ranking, best first. A strategy that
	// cannot run here (a program missing from the image) says so in
	// Unavailable rather than failing.
	Search(ctx context.Context, q Query) (protocol.CodeSearchResult, error)
}

// metaVar is an ast-grep metavariable: $NAME, $$$ARGS, $_.
var metaVar = regexp.MustCompile(`\$(\$\$)?[A-Z_][A-Z0-9_]*|\$\$\$`)

// LooksStructural reports whether q reads as a code pattern rather than
// words or a bare identifier: it has a metavariable, or brackets or
// operators that only code has. Words and identifiers are the lexical
// strategy's; a pattern of one identifier would only repeat it. A
// backslash without a metavariable is a regular expression's escape.
func LooksStructural(q string) bool {
	if metaVar.MatchString(q) {
		return true
	}
	if strings.Contains(q, `\`) {
		return false
	}
	return strings.ContainsAny(q, "(){}[];=") || strings.Contains(q, ":=")
}

// Select picks the strategies to run for q: the ones asked for, or by
// default lexical always, structural when q looks like a pattern, text
// when q is a valid regular expression, and any other (semantic) that is
// available. skipped says why each known strategy did not run.
func Select(q string, asked []protocol.SearchStrategy, available []Strategy) (run []Strategy, skipped map[protocol.SearchStrategy]string, err error) {
	skipped = map[protocol.SearchStrategy]string{}
	byName := map[protocol.SearchStrategy]Strategy{}
	for _, s := range available {
		byName[s.Name()] = s
	}
	for _, name := range protocol.SearchStrategies {
		s, ok := byName[name]
		want, why := applies(name, q)
		if len(asked) > 0 {
			want, why = slices.Contains(asked, name), "not asked for"
		}
		switch {
		case !want:
			skipped[name] = why
		case !ok:
			if len(asked) > 0 {
				return nil, nil, protocol.Errorf(protocol.CodeInvalid, "search_code: strategy %s is not available on this gateway: %s", name, unavailable(name))
			}
			skipped[name] = unavailable(name)
		default:
			run = append(run, s)
		}
	}
	return run, skipped, nil
}

// applies is the default choice of strategy name for q.
func applies(name protocol.SearchStrategy, q string) (bool, string) {
	switch name {
	case protocol.StrategyStructural:
		return LooksStructural(q), "the query has no $metavariable or code punctuation; ask for strategies [\"structural\"] to run it anyway"
	case protocol.StrategyText:
		if _, err := regexp.Compile(q); err != nil {
			return false, fmt.Sprintf("the query is not a valid regular expression (%v)", err)
		}
	}
	return true, ""
}

func unavailable(name protocol.SearchStrategy) string {
	if name == protocol.StrategySemantic {
		return "no embedding backend is configured (semantic search needs model weights, which the images do not carry)"
	}
	return "not built into this gateway"
}
