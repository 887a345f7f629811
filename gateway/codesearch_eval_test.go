package gateway_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
)

// evalQuery is a question with the files that answer it (any one of
// them in the top 5 is a hit), relative to the module root.
type evalQuery struct {
	kind, query string
	answers     []string
}

// evalQueries mix words, identifiers and structural patterns about this
// project's own gateway/ and runner/ code.
var evalQueries = []evalQuery{
	{"words", "where is the audit hash chain verified", []string{"gateway/audit/verify.go"}},
	{"words", "websocket frame size limit", []string{"runner/protocol/client.go"}},
	{"words", "skip binary files when searching", []string{"runner/files/searchfile.go"}},
	{"words", "rate limit tool calls per tenant", []string{"gateway/tools/ratelimit.go"}},
	{"words", "warm pool of idle sandboxes", []string{"gateway/fleet/pool.go"}},
	{"words", "kill the whole process tree", []string{"runner/process/tree.go"}},
	{"words", "memory peak and oom kills from the cgroup", []string{"runner/cgroup/cgroup.go", "runner/cgroup/v1.go", "runner/cgroup/v2.go"}},
	{"words", "reciprocal rank fusion of strategies", []string{"gateway/codesearch/fuse.go"}},
	{"identifier", "MaxFrameBytes", []string{"runner/protocol/client.go"}},
	{"identifier", "ParseLanguage", []string{"runner/protocol/language.go"}},
	{"identifier", "requiredScopes", []string{"gateway/tools/tools.go"}},
	{"identifier", "errSearchDone", []string{"runner/files/search.go"}},
	{"identifier", "WritePayload", []string{"runner/protocol/payload.go"}},
	{"identifier", "orDefault", []string{"runner/files/service.go"}},
	{"structural", "func ($S *Service) Search($$$) ($$$)", []string{"runner/files/search.go"}},
	{"structural", `mcpapi.NewTool("search_files", $$$)`, []string{"gateway/tools/files.go"}},
	{"structural", "syscall.Flock($A, $B)", []string{"gateway/audit/lock_unix.go"}},
	{"structural", "sha256.New()", []string{"gateway/audit/digest.go"}},
	{"structural", "func ($R $T) ServeHTTP($W http.ResponseWriter, $Q *http.Request)", []string{"runner/server.go"}},
	{"structural", "x509.NewCertPool()", []string{"runner/egress/trust.go"}},
}

// evalExcluded are files left out of the copy: the code search's own
// tests, which hold these queries and their answers.
func evalExcluded(rel string) bool {
	return strings.HasSuffix(rel, "_test.go") &&
		(strings.HasPrefix(rel, "runner/codesearch/") || strings.HasPrefix(rel, "gateway/codesearch/") ||
			strings.Contains(rel, "search_test.go") || strings.Contains(rel, "codesearch_eval_test.go"))
}

// TestCodeSearchHitRate copies this module's gateway/ and runner/ into a
// sandbox and reports, for evalQueries, each strategy's and the fused
// top-5 hit rate (go test -run TestCodeSearchHitRate -v ./gateway/; the
// table is in docs/performance.md). It asserts no rates, only that fusion does
// not do worse than the best single strategy on this set.
func TestCodeSearchHitRate(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolCallsPerMinute = 100000 })
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": ".keep", "content": ""}))
	infos, err := tg.Local.List(t.Context(), sandbox.Filter{Session: c.GetSessionId()})
	if err != nil || len(infos) != 1 {
		t.Fatalf("the session's sandbox: %+v %v", infos, err)
	}
	ws := tg.Local.Workspace(infos[0].ID)
	files := copyTree(t, "..", ws, "gateway", "runner")

	columns := []string{"lexical", "structural", "text", "fused"}
	hits := map[string]int{}
	applied := map[string]int{}
	missing := ""
	var rows []string
	for _, q := range evalQueries {
		row := fmt.Sprintf("| %s | `%s` |", q.kind, strings.ReplaceAll(q.query, "|", `\|`))
		for _, col := range columns {
			args := map[string]any{"query": q.query, "max_results": 5}
			if col != "fused" {
				args["strategies"] = []any{col}
			}
			out := structuredAs[searchCodeOut](t, mustOK(t, "search_code", call(t, c, "search_code", args)))
			for _, s := range out.Strategies {
				if s.Ran && col == "fused" {
					applied[s.Strategy]++
				}
				if s.Unavailable != "" {
					missing = s.Unavailable
				}
			}
			rank := 0
			for i, h := range out.Hits {
				rel, _ := filepath.Rel(ws, h.Path)
				if slices.Contains(q.answers, rel) {
					rank = i + 1
					break
				}
			}
			cell := "–"
			if rank > 0 {
				hits[col]++
				cell = fmt.Sprintf("#%d", rank)
			}
			row += " " + cell + " |"
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d files (gateway/ and runner/), %d queries; cell: rank of the first answer in the top 5\n\n", files, len(evalQueries))
	b.WriteString("| kind | query | lexical | structural | text | fused |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("| | **top-5 hit rate** |")
	for _, col := range columns {
		fmt.Fprintf(&b, " **%d/%d** |", hits[col], len(evalQueries))
	}
	fmt.Fprintf(&b, "\n\nstrategies run by default (fused): lexical %d, structural %d, text %d of %d queries\n",
		applied["lexical"], applied["structural"], applied["text"], len(evalQueries))
	t.Log("\n" + b.String())
	if missing != "" {
		// The Local provider runs the host's tools: a host without
		// ast-grep measures a different set of strategies.
		t.Logf("a strategy was unavailable, so fusion is not compared: %s", missing)
		return
	}
	best := max(hits["lexical"], hits["structural"], hits["text"])
	if hits["fused"] < best {
		t.Errorf("fused top-5 hit rate %d/%d is below the best single strategy's %d", hits["fused"], len(evalQueries), best)
	}
}

// copyTree copies the dirs of module root src into dst, as they are on
// disk (tests and testdata included, evalExcluded left out), and returns
// how many files it copied.
func copyTree(t *testing.T, src, dst string, dirs ...string) int {
	t.Helper()
	n := 0
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(src, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil || evalExcluded(rel) {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			to := filepath.Join(dst, rel)
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			n++
			return os.WriteFile(to, data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}
