package protocol

import (
	"slices"
	"strings"
	"time"
)

// SearchStrategy is one way search_code ranks code. The set is closed
// and decided here for the gateway (schema, fusion) and the runner.
type SearchStrategy string

// Strategies. Lexical and structural run in the runner (OpCodeSearch),
// text is file.search's regex, semantic is an embedding backend the
// gateway may be given (none is built in: it needs model weights).
const (
	StrategyLexical    SearchStrategy = "lexical"
	StrategyStructural SearchStrategy = "structural"
	StrategyText       SearchStrategy = "text"
	StrategySemantic   SearchStrategy = "semantic"
)

// SearchStrategies lists the strategies in the order they are documented.
var SearchStrategies = []SearchStrategy{StrategyLexical, StrategyStructural, StrategyText, StrategySemantic}

// ParseSearchStrategy returns the strategy named s; an unknown name is a
// CodeInvalid error listing the known ones.
func ParseSearchStrategy(s string) (SearchStrategy, error) {
	name := SearchStrategy(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(SearchStrategies, name) {
		return name, nil
	}
	names := make([]string, len(SearchStrategies))
	for i, st := range SearchStrategies {
		names[i] = string(st)
	}
	return "", Errorf(CodeInvalid, "unknown search strategy %q; use one of %s", s, strings.Join(names, ", "))
}

// Code search bounds, one policy for the gateway and the runner.
const (
	// CodeSearchTimeout bounds one search_code call, every strategy
	// included; the runner also stops a strategy at this deadline.
	CodeSearchTimeout = 10 * time.Second
	// CodeSearchRunnerTimeout is when the runner stops a strategy and
	// returns what it found (Truncated): before the gateway stops
	// waiting, so a slow scan still answers in part.
	CodeSearchRunnerTimeout = CodeSearchTimeout - 2*time.Second
	// CodeSearchDefaultResults and CodeSearchMaxResults: how many fused
	// hits search_code returns by default and at most, and how many
	// candidates one strategy returns at most.
	CodeSearchDefaultResults = 10
	CodeSearchMaxResults     = 50
	// CodeSearchRRFK is reciprocal rank fusion's k: a hit's fused score is
	// the sum over strategies of 1/(k + rank).
	CodeSearchRRFK = 60
)

// CodeSearchRequest runs one runner-side strategy (lexical or
// structural) over the files below Path (default: the workspace).
type CodeSearchRequest struct {
	Strategy   SearchStrategy `json:"strategy"`
	Query      string         `json:"query"`
	Path       string         `json:"path,omitempty"`
	Glob       string         `json:"glob,omitempty"` // base-name filter, e.g. "*.go"
	Lang       string         `json:"lang,omitempty"` // structural: the pattern's language; empty infers it per file
	MaxResults int            `json:"max_results,omitempty"`
}

// CodeHit is one ranked place in the code: a line, or for a lexical hit
// the span of the definition (or file part) it found, EndLine inclusive.
type CodeHit struct {
	Path    string  `json:"path"`
	Line    int     `json:"line"`
	EndLine int     `json:"end_line,omitempty"`
	Text    string  `json:"text"`             // the hit's first line, cut at a few hundred bytes
	Symbol  string  `json:"symbol,omitempty"` // the definition's name, e.g. "Service.Search"
	Kind    string  `json:"kind,omitempty"`   // function, method, type, class, const, var
	Score   float64 `json:"score,omitempty"`  // lexical: the BM25 score
}

// CodeSearchResult is one strategy's ranking, best first. Unavailable
// says why the strategy could not run at all (a program missing from the
// image); it is not an error, so the other strategies still answer.
type CodeSearchResult struct {
	Strategy     SearchStrategy `json:"strategy"`
	Hits         []CodeHit      `json:"hits"`
	FilesScanned int            `json:"files_scanned"`
	Truncated    bool           `json:"truncated"` // a file, byte or time cap stopped the scan
	Unavailable  string         `json:"unavailable,omitempty"`
	Note         string         `json:"note,omitempty"` // e.g. the pattern did not parse
}
