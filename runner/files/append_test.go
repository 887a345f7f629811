package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestAppend(t *testing.T) {
	t.Parallel()
	old := func(perm os.FileMode) func(t *testing.T, ws string) {
		return func(t *testing.T, ws string) { writeMode(t, filepath.Join(ws, "a"), "old", perm) }
	}
	tests := []struct {
		name     string
		setup    func(t *testing.T, ws string)
		req      protocol.WriteRequest
		want     protocol.WriteResult // Path is relative to ws
		file     string               // file to check, relative; default req.Path
		content  string
		perm     os.FileMode
		code     protocol.Code
		msgParts []string
	}{
		{name: "creates the file and its parents", req: protocol.WriteRequest{Path: "x/y/a", Content: "hi"},
			want: protocol.WriteResult{Path: "x/y/a", Bytes: 2, Created: true, Mode: 0o644}, content: "hi", perm: 0o644},
		{name: "creates with a mode", req: protocol.WriteRequest{Path: "a", Content: "hi", Mode: 0o600},
			want: protocol.WriteResult{Path: "a", Bytes: 2, Created: true, Mode: 0o600}, content: "hi", perm: 0o600},
		{name: "creates empty", req: protocol.WriteRequest{Path: "a"},
			want: protocol.WriteResult{Path: "a", Created: true, Mode: 0o644}, content: "", perm: 0o644},
		{name: "appends and keeps the mode", setup: old(0o600), req: protocol.WriteRequest{Path: "a", Content: "new"},
			want: protocol.WriteResult{Path: "a", Bytes: 3, Mode: 0o600}, content: "oldnew", perm: 0o600},
		{name: "explicit mode", setup: old(0o600), req: protocol.WriteRequest{Path: "a", Content: "\n", Mode: 0o755},
			want: protocol.WriteResult{Path: "a", Bytes: 1, Mode: 0o755}, content: "old\n", perm: 0o755},
		{name: "base64", setup: old(0o644), req: protocol.WriteRequest{Path: "a", Content: b64("\x00\xff"), Encoding: "base64"},
			want: protocol.WriteResult{Path: "a", Bytes: 2, Mode: 0o644}, content: "old\x00\xff", perm: 0o644},
		{name: "payload", setup: old(0o644), req: protocol.WriteRequest{Path: "a", Data: []byte("raw")},
			want: protocol.WriteResult{Path: "a", Bytes: 3, Mode: 0o644}, content: "oldraw", perm: 0o644},
		{name: "base64 payload", req: protocol.WriteRequest{Path: "a", Data: []byte(b64("\x01\x02")), Encoding: "base64"},
			want: protocol.WriteResult{Path: "a", Bytes: 2, Created: true, Mode: 0o644}, content: "\x01\x02", perm: 0o644},
		{name: "through a symlink",
			setup: func(t *testing.T, ws string) {
				writeFiles(t, ws, map[string]string{"real/t": "old"})
				symlink(t, "real/t", filepath.Join(ws, "link"))
			},
			req:  protocol.WriteRequest{Path: "link", Content: "new"},
			want: protocol.WriteResult{Path: "link", Bytes: 3, Mode: 0o644}, file: "real/t", content: "oldnew", perm: 0o644},
		{name: "through a dangling symlink creates its target",
			setup: func(t *testing.T, ws string) { symlink(t, "new", filepath.Join(ws, "link")) },
			req:   protocol.WriteRequest{Path: "link", Content: "n"},
			want:  protocol.WriteResult{Path: "link", Bytes: 1, Created: true, Mode: 0o644}, file: "new", content: "n", perm: 0o644},
		{name: "above the cap", req: protocol.WriteRequest{Path: "a", Content: strings.Repeat("x", 65)},
			code: protocol.CodeTooLarge, msgParts: []string{"64 bytes write cap"}},
		{name: "bad base64", req: protocol.WriteRequest{Path: "a", Content: "!!!", Encoding: "base64"},
			code: protocol.CodeInvalid, msgParts: []string{"not valid base64"}},
		{name: "bad mode", req: protocol.WriteRequest{Path: "a", Content: "x", Mode: 0o10000},
			code: protocol.CodeInvalid, msgParts: []string{"not a permission mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, files.Options{MaxWriteBytes: 64})
			if tt.setup != nil {
				tt.setup(t, ws)
			}
			tt.req.Append = true
			got, err := s.Write(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msgParts...)
			if tt.code != "" {
				return
			}
			tt.want.Path = filepath.Join(ws, tt.want.Path)
			if got != tt.want {
				t.Errorf("append\n got %+v\nwant %+v", got, tt.want)
			}
			file := tt.file
			if file == "" {
				file = tt.req.Path
			}
			checkFile(t, filepath.Join(ws, file), tt.content, tt.perm)
		})
	}
}

// TestAppendInPieces builds a file from several appends, as the gateway
// does for a large upload, and checks the link it wrote through survives.
func TestAppendInPieces(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	symlink(t, "big.part", filepath.Join(ws, "link"))
	var want strings.Builder
	for i, piece := range []string{"first ", "second ", "", "third"} {
		got, err := s.Write(t.Context(), protocol.WriteRequest{Path: "link", Content: piece, Append: true})
		if err != nil {
			t.Fatalf("piece %d: %v", i, err)
		}
		want.WriteString(piece)
		if got.Created != (i == 0) || got.Bytes != int64(len(piece)) {
			t.Errorf("piece %d: %+v, want created %v and %d bytes", i, got, i == 0, len(piece))
		}
	}
	checkFile(t, filepath.Join(ws, "big.part"), want.String(), 0o644)
	if readLink(t, filepath.Join(ws, "link")) != "big.part" {
		t.Error("the symlink written through was replaced")
	}
	if left := tempFiles(t, ws); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestAppendPathRulesMatchWrite: an append may go where a write may and is
// refused where a write is, with the same code. The package's rule is
// that the container, not the runner, confines paths, so a path outside
// the workspace, directly or through a symlink, is no more refused to an
// append than to a write; what both refuse is anything but a regular file
// at the end of the path. A named pipe must be refused without blocking.
func TestAppendPathRulesMatchWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, ws, outside string) string // returns the request path
		code  protocol.Code
	}{
		{"absolute path outside the workspace", func(t *testing.T, ws, outside string) string {
			return filepath.Join(outside, "f")
		}, ""},
		{"symlink to a file outside", func(t *testing.T, ws, outside string) string {
			symlink(t, filepath.Join(outside, "f"), filepath.Join(ws, "l"))
			return "l"
		}, ""},
		{"symlinked parent outside", func(t *testing.T, ws, outside string) string {
			symlink(t, outside, filepath.Join(ws, "d"))
			return "d/f"
		}, ""},
		{"directory", func(t *testing.T, ws, outside string) string {
			writeFiles(t, ws, map[string]string{"d/": ""})
			return "d"
		}, protocol.CodeIsDir},
		{"symlink to a directory", func(t *testing.T, ws, outside string) string {
			symlink(t, outside, filepath.Join(ws, "l"))
			return "l"
		}, protocol.CodeIsDir},
		{"named pipe", func(t *testing.T, ws, outside string) string {
			if err := syscall.Mkfifo(filepath.Join(ws, "p"), 0o644); err != nil {
				t.Fatal(err)
			}
			return "p"
		}, protocol.CodeInvalid},
		{"device", func(t *testing.T, ws, outside string) string {
			symlink(t, "/dev/null", filepath.Join(ws, "l"))
			return "l"
		}, protocol.CodeInvalid},
		{"symlink loop", func(t *testing.T, ws, outside string) string {
			symlink(t, "loop", filepath.Join(ws, "loop"))
			return "loop"
		}, protocol.CodeInvalid},
		{"parent is a file", func(t *testing.T, ws, outside string) string {
			writeFiles(t, ws, map[string]string{"f": ""})
			return "f/x"
		}, protocol.CodeNotDir},
		{"empty path", func(t *testing.T, ws, outside string) string { return "" }, protocol.CodeInvalid},
		{"NUL in the path", func(t *testing.T, ws, outside string) string { return "a\x00b" }, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, appending := range []bool{false, true} {
				s, ws := newService(t, files.Options{})
				outside := t.TempDir()
				path := tt.setup(t, ws, outside)
				_, err := s.Write(t.Context(), protocol.WriteRequest{Path: path, Content: "x", Append: appending})
				if got := protocol.CodeOf(err); err != nil && got != tt.code || err == nil && tt.code != "" {
					t.Errorf("append %v: error %v, want code %q", appending, err, tt.code)
				}
			}
		})
	}
}
