package codesearch_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/runner/codesearch"
	"github.com/sandgate/sandgate/runner/protocol"
)

// writeTree writes files (relative path → content) below dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// lexicalFixture is a small project in three languages.
var lexicalFixture = map[string]string{
	"audit/verify.go": `package audit

// Verify reads the log and checks that each record's hash chains to the
// previous one.
func Verify(path string) error { return nil }

func helper() {}
`,
	"audit/sink.go": `package audit

// Sink appends records to the log.
type Sink struct{}

// Append writes one record.
func (s *Sink) Append(rec []byte) error { return nil }
`,
	"proto/client.go": `package proto

// MaxFrameBytes bounds one websocket frame.
const MaxFrameBytes = 1 << 20

func dial() {}
`,
	"web/queue.ts": `export class RetryQueue {
  // Retry a failed upload with backoff.
  async retryUpload(item: string): Promise<void> {
  }
}
`,
	"tools/parse_config.py": `def parse_config(path):
    """Read the TOML configuration file."""
    return {}
`,
	"node_modules/dep/index.js":  "function verify() { /* hash chain verify */ }\n",
	".hidden/verify.go":          "package h\n// hash chain verify\nfunc Verify() {}\n",
	"docs/verify-hash-chain.md":  "hash chain verify\n",
	"proto/client_frame_test.go": "package proto\n",
}

func lexical(t *testing.T, ws, query string, mut func(*protocol.CodeSearchRequest)) protocol.CodeSearchResult {
	t.Helper()
	req := protocol.CodeSearchRequest{Strategy: protocol.StrategyLexical, Query: query}
	if mut != nil {
		mut(&req)
	}
	res, err := codesearch.New(codesearch.Options{Workspace: ws}).Search(t.Context(), req)
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	return res
}

func TestLexicalRanking(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTree(t, ws, lexicalFixture)
	for _, tc := range []struct {
		query      string
		path       string // relative
		line       int
		symbol     string
		kind       string
		secondPath string // "" when there is no expectation
	}{
		{"where is the hash chain verified", "audit/verify.go", 5, "Verify", "function", ""},
		{"MaxFrameBytes", "proto/client.go", 4, "MaxFrameBytes", "const", ""},
		{"websocket frame size limit", "proto/client.go", 4, "MaxFrameBytes", "const", ""},
		{"append record to sink", "audit/sink.go", 7, "Sink.Append", "method", "audit/sink.go"},
		{"retry upload", "web/queue.ts", 3, "RetryQueue.retryUpload", "method", ""},
		{"parse_config", "tools/parse_config.py", 1, "parse_config", "function", ""},
		{"toml configuration", "tools/parse_config.py", 1, "parse_config", "function", ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			res := lexical(t, ws, tc.query, nil)
			if len(res.Hits) == 0 {
				t.Fatalf("no hits; result %+v", res)
			}
			h := res.Hits[0]
			if h.Path != filepath.Join(ws, tc.path) || h.Line != tc.line || h.Symbol != tc.symbol || h.Kind != tc.kind {
				t.Errorf("first hit %s:%d %s %s, want %s:%d %s %s; all: %+v", h.Path, h.Line, h.Symbol, h.Kind, tc.path, tc.line, tc.symbol, tc.kind, res.Hits)
			}
			if tc.secondPath != "" && (len(res.Hits) < 2 || res.Hits[1].Path != filepath.Join(ws, tc.secondPath)) {
				t.Errorf("second hit not in %s: %+v", tc.secondPath, res.Hits)
			}
			for i := 1; i < len(res.Hits); i++ {
				if res.Hits[i].Score > res.Hits[i-1].Score {
					t.Errorf("hits not in score order: %+v", res.Hits)
				}
			}
		})
	}
}

// TestLexicalSkips checks what the walk leaves out: hidden and dependency
// directories, non-source files, files above the size cap.
func TestLexicalSkips(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTree(t, ws, lexicalFixture)
	res := lexical(t, ws, "hash chain verify", nil)
	for _, h := range res.Hits {
		rel, _ := filepath.Rel(ws, h.Path)
		if rel != "audit/verify.go" && rel != "audit/sink.go" {
			t.Errorf("hit in %s, which the walk should skip or which does not match", rel)
		}
	}
	if res.FilesScanned != 6 {
		t.Errorf("files scanned = %d, want the 6 source files outside hidden and dependency directories", res.FilesScanned)
	}
}

func TestLexicalBounds(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeTree(t, ws, lexicalFixture)
	s := codesearch.New(codesearch.Options{Workspace: ws, MaxFiles: 2})
	res, err := s.Search(t.Context(), protocol.CodeSearchRequest{Strategy: protocol.StrategyLexical, Query: "verify"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.FilesScanned != 2 {
		t.Errorf("MaxFiles 2: truncated %v after %d files, want true after 2", res.Truncated, res.FilesScanned)
	}
	res = lexical(t, ws, "verify", func(r *protocol.CodeSearchRequest) { r.Glob = "*.py" })
	if res.FilesScanned != 1 {
		t.Errorf("glob *.py scanned %d files, want 1", res.FilesScanned)
	}
	res = lexical(t, ws, "record", func(r *protocol.CodeSearchRequest) { r.MaxResults = 1 })
	if len(res.Hits) != 1 {
		t.Errorf("max_results 1 gave %d hits", len(res.Hits))
	}
	res = lexical(t, ws, "where is the", nil)
	if len(res.Hits) != 0 || res.Note == "" {
		t.Errorf("a query of stop words: %+v, want no hits and a note", res)
	}
}

func TestSearchRefuses(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	s := codesearch.New(codesearch.Options{Workspace: ws})
	for name, req := range map[string]protocol.CodeSearchRequest{
		"empty query":    {Strategy: protocol.StrategyLexical, Query: " "},
		"text strategy":  {Strategy: protocol.StrategyText, Query: "x"},
		"glob with path": {Strategy: protocol.StrategyLexical, Query: "x", Glob: "a/*.go"},
		"missing path":   {Strategy: protocol.StrategyLexical, Query: "x", Path: "nope"},
		"NUL in path":    {Strategy: protocol.StrategyLexical, Query: "x", Path: "a\x00b"},
	} {
		if _, err := s.Search(t.Context(), req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
