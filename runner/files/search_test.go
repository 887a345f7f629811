package files_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

// searchTree builds the tree the Search tests walk.
func searchTree(t *testing.T, ws string) {
	t.Helper()
	writeFiles(t, ws, map[string]string{
		"main.go":        "package main\nfunc main() {}\n// TODO\n",
		"lib/util.go":    "package lib\nfunc Util() {}\n",
		"lib/readme.md":  "func in markdown\n",
		".git/config":    "func hidden\n",
		".env":           "FUNC=1\n",
		"bin.dat":        "func\x00binary\n",
		"crlf.txt":       "line one\r\nfunc two\r\n",
		"big.txt":        "func\n" + strings.Repeat("x", 2000),
		"long.txt":       "func " + strings.Repeat("é", 400) + "\n",
		"many/funcs.txt": strings.Repeat("func\n", 5),
	})
	symlink(t, "main.go", filepath.Join(ws, "zlink.go"))
}

func TestSearch(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{MaxSearchFileBytes: 1000})
	searchTree(t, ws)
	all := []string{"crlf.txt:2", "lib/readme.md:1", "lib/util.go:2", "long.txt:1", "main.go:2",
		"many/funcs.txt:1", "many/funcs.txt:2", "many/funcs.txt:3", "many/funcs.txt:4", "many/funcs.txt:5"}
	tests := []struct {
		name      string
		req       protocol.SearchRequest
		want      []string // "relative/path:line"
		truncated bool
		code      protocol.Code
		msg       []string
	}{
		{name: "walks the workspace", req: protocol.SearchRequest{Pattern: "func"}, want: all},
		{name: "ignore case finds hidden files", req: protocol.SearchRequest{Pattern: "^func=", IgnoreCase: true},
			want: []string{".env:1"}},
		{name: "glob", req: protocol.SearchRequest{Pattern: "func", Glob: "*.go"},
			want: []string{"lib/util.go:2", "main.go:2"}},
		{name: "directory path", req: protocol.SearchRequest{Pattern: "func", Path: "lib"},
			want: []string{"lib/readme.md:1", "lib/util.go:2"}},
		{name: "file path", req: protocol.SearchRequest{Pattern: "TODO", Path: "main.go"},
			want: []string{"main.go:3"}},
		{name: "hidden directory named as path", req: protocol.SearchRequest{Pattern: "func", Path: ".git"},
			want: []string{".git/config:1"}},
		{name: "$ matches before CR", req: protocol.SearchRequest{Pattern: "two$"},
			want: []string{"crlf.txt:2"}},
		{name: "no matches", req: protocol.SearchRequest{Pattern: "nothing here"}, want: []string{}},
		{name: "max_results", req: protocol.SearchRequest{Pattern: "func", MaxResults: 2},
			want: all[:2], truncated: true},
		{name: "max_results that fits exactly", req: protocol.SearchRequest{Pattern: "func", MaxResults: len(all)},
			want: all},
		{name: "binary file named as path", req: protocol.SearchRequest{Pattern: "func", Path: "bin.dat"},
			code: protocol.CodeInvalid, msg: []string{"binary", "base64"}},
		{name: "big file named as path", req: protocol.SearchRequest{Pattern: "func", Path: "big.txt"},
			code: protocol.CodeTooLarge, msg: []string{"per-file search cap"}},
		{name: "invalid pattern", req: protocol.SearchRequest{Pattern: "("},
			code: protocol.CodeInvalid, msg: []string{"invalid pattern", "missing closing )", "RE2"}},
		{name: "empty pattern", req: protocol.SearchRequest{}, code: protocol.CodeInvalid},
		{name: "invalid glob", req: protocol.SearchRequest{Pattern: "x", Glob: "[a-"},
			code: protocol.CodeInvalid, msg: []string{"invalid glob"}},
		{name: "glob with a slash", req: protocol.SearchRequest{Pattern: "x", Glob: "lib/*.go"},
			code: protocol.CodeInvalid, msg: []string{"base names"}},
		{name: "negative max_results", req: protocol.SearchRequest{Pattern: "x", MaxResults: -1}, code: protocol.CodeInvalid},
		{name: "missing path", req: protocol.SearchRequest{Pattern: "x", Path: "nope"}, code: protocol.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Search(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			if tt.code != "" {
				return
			}
			if got.Matches == nil {
				t.Error("Matches is nil; it must encode as [] in JSON")
			}
			if names := matchNames(ws, got); !reflect.DeepEqual(names, tt.want) || got.Truncated != tt.truncated {
				t.Errorf("Search = %q truncated=%v, want %q truncated=%v", names, got.Truncated, tt.want, tt.truncated)
			}
		})
	}
}

func TestSearchMatchText(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	searchTree(t, ws)
	got, err := s.Search(t.Context(), protocol.SearchRequest{Pattern: "func (two|é)"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Matches) != 2 {
		t.Fatalf("matches = %+v", got.Matches)
	}
	if m := got.Matches[0]; m.Text != "func two" {
		t.Errorf("CRLF line text = %q, want it without the CR", m.Text)
	}
	long := got.Matches[1].Text
	if len(long) > 300 || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "func éé") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("long line text (%d bytes) = %q, want at most 300 bytes cut at a rune boundary", len(long), long)
	}
}

func TestSearchCaps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      files.Options
		matches   int
		scanned   int
		truncated bool
	}{
		{name: "defaults", opts: files.Options{}, matches: 30, scanned: 3},
		{name: "result cap", opts: files.Options{MaxSearchResults: 4}, matches: 4, scanned: 1, truncated: true},
		{name: "byte cap", opts: files.Options{MaxSearchBytes: 25}, matches: 3, scanned: 1, truncated: true},
		{name: "file cap", opts: files.Options{MaxSearchFiles: 2}, matches: 20, scanned: 2, truncated: true},
		{name: "per-file cap skips", opts: files.Options{MaxSearchFileBytes: 100}, matches: 10, scanned: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, tt.opts)
			for i, n := range []int{10, 10, 10} {
				var b strings.Builder
				for j := range n {
					fmt.Fprintf(&b, "match %d %s\n", j, strings.Repeat("-", i*10))
				}
				writeFiles(t, ws, map[string]string{fmt.Sprintf("f%d", i): b.String()})
			}
			got, err := s.Search(t.Context(), protocol.SearchRequest{Pattern: "match"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Matches) != tt.matches || got.FilesScanned != tt.scanned || got.Truncated != tt.truncated {
				t.Errorf("matches=%d scanned=%d truncated=%v, want %d, %d, %v",
					len(got.Matches), got.FilesScanned, got.Truncated, tt.matches, tt.scanned, tt.truncated)
			}
		})
	}
}

func TestSearchCanceled(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	searchTree(t, ws)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Search(ctx, protocol.SearchRequest{Pattern: "func"})
	checkErr(t, err, protocol.CodeCanceled)
}

// matchNames renders matches as "relative/path:line".
func matchNames(ws string, res protocol.SearchResult) []string {
	names := []string{}
	for _, m := range res.Matches {
		rel, _ := filepath.Rel(ws, m.Path)
		names = append(names, fmt.Sprintf("%s:%d", rel, m.Line))
	}
	return names
}
