package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/gateway/codesearch"
	"github.com/sandgate/sandgate/runner/protocol"
)

type searchCodeArgs struct {
	Query string `json:"query" jsonschema:"What to find: words (where is the audit hash chain verified), an identifier (MaxFrameBytes), a regular expression, or an ast-grep pattern, code with $NAME and $$$ metavariables (func $NAME($$$) error)."`
	searchPathArg
	Glob       string   `json:"glob,omitempty" jsonschema:"Only files whose name matches, e.g. *.go."`
	Lang       string   `json:"lang,omitempty" jsonschema:"Language of a structural pattern: go, python, javascript, typescript, tsx, ... (default: each file's own)."`
	Strategies []string `json:"strategies,omitempty" jsonschema:"Run only these: lexical, structural, text (default: lexical always, structural when the query has a $metavariable or code punctuation, text when it is a valid regular expression)."`
	MaxResults int      `json:"max_results,omitempty" jsonschema:"How many fused hits to return (default 10, at most 50)."`
	sandboxArg
}

// searchCodeResult is search_code's structuredContent.
type searchCodeResult struct {
	Query      string            `json:"query"`
	Hits       []codesearch.Hit  `json:"hits"`
	Strategies []strategyOutcome `json:"strategies"`
}

// strategyOutcome says what one strategy did.
type strategyOutcome struct {
	Strategy     protocol.SearchStrategy `json:"strategy"`
	Ran          bool                    `json:"ran"`
	Hits         int                     `json:"hits"`
	FilesScanned int                     `json:"files_scanned,omitempty"`
	Truncated    bool                    `json:"truncated,omitempty"`
	Skipped      string                  `json:"skipped,omitempty"`     // why it did not run
	Unavailable  string                  `json:"unavailable,omitempty"` // e.g. ast-grep missing from the image
	Note         string                  `json:"note,omitempty"`
	Error        string                  `json:"error,omitempty"`
}

func searchTools() []toolDef {
	return []toolDef{
		{category: catFiles, needsBox: true, summary: summarize("query", "path", "glob", "lang"), run: runSearchCode,
			tool: mcpapi.NewTool("search_code", argsSchema[searchCodeArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Search the sandbox's code several ways at once and fuse the rankings by reciprocal rank (score = sum of 1/(60 + rank)): lexical (BM25 over the words and identifiers of source files, definitions of functions, types, classes and methods first), structural (ast-grep syntax-tree patterns over Go, Python, JavaScript/TypeScript and more) and text (the query as a regular expression, like search_files). Each hit says which strategies found it and at what rank. Bounded to 10 s; hidden, node_modules and vendor directories are skipped."))},
	}
}

// runnerStrategy is a strategy the sandbox's runner serves.
type runnerStrategy struct {
	name   protocol.SearchStrategy
	runner *protocol.Client
}

func (s runnerStrategy) Name() protocol.SearchStrategy { return s.name }

func (s runnerStrategy) Search(ctx context.Context, q codesearch.Query) (protocol.CodeSearchResult, error) {
	if s.name == protocol.StrategyText {
		return textSearch(ctx, s.runner, q)
	}
	var res protocol.CodeSearchResult
	req := protocol.CodeSearchRequest{Strategy: s.name, Query: q.Text, Path: q.Path, Glob: q.Glob, Lang: q.Lang, MaxResults: q.Limit}
	err := s.runner.Call(ctx, protocol.OpCodeSearch, req, &res)
	res.Strategy = s.name
	return res, err
}

// textSearch is file.search's regex as a ranking: matches in walk order.
func textSearch(ctx context.Context, r *protocol.Client, q codesearch.Query) (protocol.CodeSearchResult, error) {
	var sr protocol.SearchResult
	req := protocol.SearchRequest{Pattern: q.Text, Path: q.Path, Glob: q.Glob, MaxResults: q.Limit}
	if err := r.Call(ctx, protocol.OpFileSearch, req, &sr); err != nil {
		return protocol.CodeSearchResult{Strategy: protocol.StrategyText}, err
	}
	res := protocol.CodeSearchResult{Strategy: protocol.StrategyText, FilesScanned: sr.FilesScanned, Truncated: sr.Truncated, Hits: []protocol.CodeHit{}}
	for _, m := range sr.Matches {
		res.Hits = append(res.Hits, protocol.CodeHit{Path: m.Path, Line: m.Line, Text: m.Text})
	}
	return res, nil
}

// searchStrategies are the strategies a call can use. An embedding
// backend (protocol.StrategySemantic) would be added here, as one more
// codesearch.Strategy.
func searchStrategies(c *call) []codesearch.Strategy {
	return []codesearch.Strategy{
		runnerStrategy{protocol.StrategyLexical, c.runner},
		runnerStrategy{protocol.StrategyStructural, c.runner},
		runnerStrategy{protocol.StrategyText, c.runner},
	}
}

func runSearchCode(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[searchCodeArgs](c)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, protocol.Errorf(protocol.CodeInvalid, "search_code: query is empty; pass words, an identifier, a regular expression or a code pattern")
	}
	limit := a.MaxResults
	if limit <= 0 {
		limit = protocol.CodeSearchDefaultResults
	}
	limit = min(limit, protocol.CodeSearchMaxResults)
	var asked []protocol.SearchStrategy
	for _, s := range a.Strategies {
		st, err := protocol.ParseSearchStrategy(s)
		if err != nil {
			return nil, err
		}
		asked = append(asked, st)
	}
	run, skipped, err := codesearch.Select(a.Query, asked, searchStrategies(c))
	if err != nil {
		return nil, err
	}
	// Every strategy returns its most candidates: fusion needs depth
	// beyond the hits returned.
	q := codesearch.Query{Text: a.Query, Path: a.Path, Glob: a.Glob, Lang: a.Lang, Limit: protocol.CodeSearchMaxResults}
	lists, outcomes := runStrategies(ctx, run, q)
	res := searchCodeResult{Query: a.Query, Hits: codesearch.Fuse(protocol.CodeSearchRRFK, lists, limit)}
	for _, name := range protocol.SearchStrategies {
		if o, ok := outcomes[name]; ok {
			res.Strategies = append(res.Strategies, o)
		} else {
			res.Strategies = append(res.Strategies, strategyOutcome{Strategy: name, Skipped: skipped[name]})
		}
	}
	if len(lists) == 0 {
		return nil, errors.New(searchFailure(res.Strategies))
	}
	return structured(res, searchText(res), false), nil
}

// runStrategies runs the strategies side by side, all within
// protocol.CodeSearchTimeout; one that fails or times out is reported in
// its outcome and the others still count.
func runStrategies(ctx context.Context, run []codesearch.Strategy, q codesearch.Query) ([]protocol.CodeSearchResult, map[protocol.SearchStrategy]strategyOutcome) {
	ctx, cancel := context.WithTimeout(ctx, protocol.CodeSearchTimeout)
	defer cancel()
	results := make([]protocol.CodeSearchResult, len(run))
	errs := make([]error, len(run))
	var wg sync.WaitGroup
	for i, s := range run {
		wg.Go(func() { results[i], errs[i] = s.Search(ctx, q) })
	}
	wg.Wait()
	var lists []protocol.CodeSearchResult
	outcomes := map[protocol.SearchStrategy]strategyOutcome{}
	for i, s := range run {
		r := results[i]
		o := strategyOutcome{Strategy: s.Name(), Ran: true, Hits: len(r.Hits), FilesScanned: r.FilesScanned,
			Truncated: r.Truncated, Unavailable: r.Unavailable, Note: r.Note}
		switch {
		case errs[i] != nil && ctx.Err() != nil:
			o.Error = fmt.Sprintf("stopped after %s, the search_code time limit; narrow path or glob", protocol.CodeSearchTimeout)
		case errs[i] != nil:
			o.Error = errs[i].Error()
		default:
			r.Strategy = s.Name()
			lists = append(lists, r)
		}
		outcomes[s.Name()] = o
	}
	return lists, outcomes
}

// searchFailure is the error of a search no strategy could answer.
func searchFailure(outcomes []strategyOutcome) string {
	var parts []string
	for _, o := range outcomes {
		if o.Error != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", o.Strategy, o.Error))
		}
	}
	return "search_code: no strategy answered: " + strings.Join(parts, "; ")
}

// searchText renders the fused hits, then what each strategy did.
func searchText(r searchCodeResult) string {
	var b strings.Builder
	for i, h := range r.Hits {
		fmt.Fprintf(&b, "%d. %s:%d", i+1, h.Path, h.Line)
		if h.EndLine > h.Line {
			fmt.Fprintf(&b, "-%d", h.EndLine)
		}
		if h.Symbol != "" {
			fmt.Fprintf(&b, " %s", h.Symbol)
			if h.Kind != "" {
				fmt.Fprintf(&b, " (%s)", h.Kind)
			}
		}
		fmt.Fprintf(&b, " [%s]\n   %s\n", h.String(), strings.TrimSpace(h.Text))
	}
	if len(r.Hits) == 0 {
		b.WriteString("no hits\n")
	}
	for _, o := range r.Strategies {
		switch {
		case o.Unavailable != "":
			fmt.Fprintf(&b, "%s: unavailable: %s\n", o.Strategy, o.Unavailable)
		case o.Error != "":
			fmt.Fprintf(&b, "%s: error: %s\n", o.Strategy, o.Error)
		case !o.Ran:
			fmt.Fprintf(&b, "%s: skipped: %s\n", o.Strategy, o.Skipped)
		default:
			fmt.Fprintf(&b, "%s: %d hits", o.Strategy, o.Hits)
			if o.Truncated {
				b.WriteString(" (truncated)")
			}
			if o.Note != "" {
				fmt.Fprintf(&b, "; %s", o.Note)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
