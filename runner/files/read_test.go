package files_test

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestRead(t *testing.T) {
	t.Parallel()
	// A 64-byte cap makes the cap paths cheap to reach.
	s, ws := newService(t, files.Options{MaxReadBytes: 64})
	lines := strings.Repeat("0123456789\n", 20) // 20 lines of 11 bytes
	writeFiles(t, ws, map[string]string{
		"a.txt":     "one\ntwo\nthree\n",
		"noeol.txt": "one\ntwo",
		"bin":       "\x00\x01\xff",
		"utf8.txt":  "héllo",
		"lines.txt": lines,
		"long.txt":  strings.Repeat("x", 100) + "\n",
		"empty":     "",
		"dir/":      "",
	})
	symlink(t, "a.txt", filepath.Join(ws, "link"))
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs := func(name string) string { return filepath.Join(ws, name) }

	tests := []struct {
		name string
		req  protocol.ReadRequest
		want protocol.ReadResult // Path is relative to ws
		code protocol.Code
		msg  []string
	}{
		{"whole", protocol.ReadRequest{Path: "a.txt"},
			protocol.ReadResult{Path: "a.txt", Content: "one\ntwo\nthree\n", Encoding: "text", Size: 14, Bytes: 14, EOF: true}, "", nil},
		{"absolute path", protocol.ReadRequest{Path: abs("a.txt")},
			protocol.ReadResult{Path: "a.txt", Content: "one\ntwo\nthree\n", Encoding: "text", Size: 14, Bytes: 14, EOF: true}, "", nil},
		{"unclean path", protocol.ReadRequest{Path: "dir/../a.txt"},
			protocol.ReadResult{Path: "a.txt", Content: "one\ntwo\nthree\n", Encoding: "text", Size: 14, Bytes: 14, EOF: true}, "", nil},
		{"through symlink", protocol.ReadRequest{Path: "link"},
			protocol.ReadResult{Path: "link", Content: "one\ntwo\nthree\n", Encoding: "text", Size: 14, Bytes: 14, EOF: true}, "", nil},
		{"base64 asked", protocol.ReadRequest{Path: "noeol.txt", Encoding: "base64"},
			protocol.ReadResult{Path: "noeol.txt", Content: b64("one\ntwo"), Encoding: "base64", Size: 7, Bytes: 7, EOF: true}, "", nil},
		{"binary becomes base64", protocol.ReadRequest{Path: "bin"},
			protocol.ReadResult{Path: "bin", Content: b64("\x00\x01\xff"), Encoding: "base64", Size: 3, Bytes: 3, EOF: true}, "", nil},
		{"empty file", protocol.ReadRequest{Path: "empty"},
			protocol.ReadResult{Path: "empty", Encoding: "text", EOF: true}, "", nil},
		{"raw text", protocol.ReadRequest{Path: "a.txt", Raw: true},
			protocol.ReadResult{Path: "a.txt", Data: []byte("one\ntwo\nthree\n"), Encoding: "text", Size: 14, Bytes: 14, EOF: true}, "", nil},
		{"raw binary is to be shown as base64", protocol.ReadRequest{Path: "bin", Raw: true},
			protocol.ReadResult{Path: "bin", Data: []byte("\x00\x01\xff"), Encoding: "base64", Size: 3, Bytes: 3, EOF: true}, "", nil},
		{"raw with base64 asked", protocol.ReadRequest{Path: "noeol.txt", Encoding: "base64", Raw: true},
			protocol.ReadResult{Path: "noeol.txt", Data: []byte("one\ntwo"), Encoding: "base64", Size: 7, Bytes: 7, EOF: true}, "", nil},
		{"raw line range", protocol.ReadRequest{Path: "a.txt", StartLine: 2, EndLine: 2, Raw: true},
			protocol.ReadResult{Path: "a.txt", Data: []byte("two\n"), Encoding: "text", Size: 14, Offset: 4, Bytes: 4, StartLine: 2, EndLine: 2, TotalLines: 3}, "", nil},
		{"byte range", protocol.ReadRequest{Path: "a.txt", Offset: 4, Limit: 3},
			protocol.ReadResult{Path: "a.txt", Content: "two", Encoding: "text", Size: 14, Offset: 4, Bytes: 3}, "", nil},
		{"byte range to exact end", protocol.ReadRequest{Path: "a.txt", Offset: 8, Limit: 6},
			protocol.ReadResult{Path: "a.txt", Content: "three\n", Encoding: "text", Size: 14, Offset: 8, Bytes: 6, EOF: true}, "", nil},
		{"byte range past end", protocol.ReadRequest{Path: "a.txt", Offset: 8, Limit: 100},
			protocol.ReadResult{Path: "a.txt", Content: "three\n", Encoding: "text", Size: 14, Offset: 8, Bytes: 6, EOF: true}, "", nil},
		{"offset beyond size", protocol.ReadRequest{Path: "a.txt", Offset: 100},
			protocol.ReadResult{Path: "a.txt", Encoding: "text", Size: 14, Offset: 100, EOF: true}, "", nil},
		{"byte range keeps a cut rune for later", protocol.ReadRequest{Path: "utf8.txt", Limit: 2},
			protocol.ReadResult{Path: "utf8.txt", Content: "h", Encoding: "text", Size: 6, Bytes: 1}, "", nil},
		{"byte range without limit stops at the cap", protocol.ReadRequest{Path: "lines.txt", Offset: 1},
			protocol.ReadResult{Path: "lines.txt", Content: lines[1:65], Encoding: "text", Size: 220, Offset: 1, Bytes: 64}, "", nil},
		{"max_bytes lowers the cap", protocol.ReadRequest{Path: "lines.txt", Offset: 11, MaxBytes: 11},
			protocol.ReadResult{Path: "lines.txt", Content: "0123456789\n", Encoding: "text", Size: 220, Offset: 11, Bytes: 11}, "", nil},
		{"one line", protocol.ReadRequest{Path: "a.txt", StartLine: 2, EndLine: 2},
			protocol.ReadResult{Path: "a.txt", Content: "two\n", Encoding: "text", Size: 14, Offset: 4, Bytes: 4, StartLine: 2, EndLine: 2, TotalLines: 3}, "", nil},
		{"lines to the end", protocol.ReadRequest{Path: "a.txt", StartLine: 2},
			protocol.ReadResult{Path: "a.txt", Content: "two\nthree\n", Encoding: "text", Size: 14, Offset: 4, Bytes: 10, StartLine: 2, EndLine: 3, TotalLines: 3, EOF: true}, "", nil},
		{"end_line alone starts at 1", protocol.ReadRequest{Path: "a.txt", EndLine: 1},
			protocol.ReadResult{Path: "a.txt", Content: "one\n", Encoding: "text", Size: 14, Bytes: 4, StartLine: 1, EndLine: 1, TotalLines: 3}, "", nil},
		{"lines past the last without newline", protocol.ReadRequest{Path: "noeol.txt", StartLine: 2, EndLine: 9},
			protocol.ReadResult{Path: "noeol.txt", Content: "two", Encoding: "text", Size: 7, Offset: 4, Bytes: 3, StartLine: 2, EndLine: 2, TotalLines: 2, EOF: true}, "", nil},
		{"lines of an empty file", protocol.ReadRequest{Path: "empty", StartLine: 1},
			protocol.ReadResult{Path: "empty", Encoding: "text", EOF: true}, "", nil},
		{"lines stop at the cap, whole lines only", protocol.ReadRequest{Path: "lines.txt", StartLine: 3},
			protocol.ReadResult{Path: "lines.txt", Content: lines[22:77], Encoding: "text", Size: 220, Offset: 22, Bytes: 55, StartLine: 3, EndLine: 7, TotalLines: 20}, "", nil},
		{"start_line past the end", protocol.ReadRequest{Path: "a.txt", StartLine: 5}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"start_line 5", "3 lines"}},
		{"line longer than the cap", protocol.ReadRequest{Path: "long.txt", StartLine: 1}, protocol.ReadResult{},
			protocol.CodeTooLarge, []string{"line 1", "offset=0"}},
		{"whole file above the cap", protocol.ReadRequest{Path: "lines.txt"}, protocol.ReadResult{},
			protocol.CodeTooLarge, []string{abs("lines.txt"), "220 bytes", "64 bytes read cap", "offset/limit", "start_line/end_line"}},
		{"both kinds of range", protocol.ReadRequest{Path: "a.txt", Offset: 1, StartLine: 1}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"not both"}},
		{"start after end", protocol.ReadRequest{Path: "a.txt", StartLine: 3, EndLine: 2}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"after end_line"}},
		{"negative offset", protocol.ReadRequest{Path: "a.txt", Offset: -1}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"negative"}},
		{"unknown encoding", protocol.ReadRequest{Path: "a.txt", Encoding: "hex"}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{`"hex"`}},
		{"directory", protocol.ReadRequest{Path: "dir"}, protocol.ReadResult{},
			protocol.CodeIsDir, []string{abs("dir"), "list_directory"}},
		{"named pipe", protocol.ReadRequest{Path: "fifo"}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"named pipe"}},
		{"missing", protocol.ReadRequest{Path: "nope"}, protocol.ReadResult{},
			protocol.CodeNotFound, []string{abs("nope"), "no such file"}},
		{"file as a directory", protocol.ReadRequest{Path: "a.txt/x"}, protocol.ReadResult{},
			protocol.CodeNotDir, nil},
		{"empty path", protocol.ReadRequest{}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"path is empty"}},
		{"NUL in path", protocol.ReadRequest{Path: "a\x00b"}, protocol.ReadResult{},
			protocol.CodeInvalid, []string{"NUL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Read(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			if tt.code != "" {
				return
			}
			tt.want.Path = abs(tt.want.Path)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Read(%+v)\n got %+v\nwant %+v", tt.req, got, tt.want)
			}
		})
	}
}

func TestReadCanceled(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"a": "x"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Read(ctx, protocol.ReadRequest{Path: "a"})
	checkErr(t, err, protocol.CodeCanceled)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestReadPermissionDenied(t *testing.T) {
	t.Parallel()
	skipIfRoot(t)
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"secret": "x"})
	chmod(t, filepath.Join(ws, "secret"), 0)
	_, err := s.Read(t.Context(), protocol.ReadRequest{Path: "secret"})
	checkErr(t, err, protocol.CodePermission, filepath.Join(ws, "secret"), "permission denied", "uid")
}
