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

func TestWrite(t *testing.T) {
	t.Parallel()
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
		{name: "new file", req: protocol.WriteRequest{Path: "a.txt", Content: "hi\n"},
			want: protocol.WriteResult{Path: "a.txt", Bytes: 3, Created: true, Mode: 0o644}, content: "hi\n", perm: 0o644},
		{name: "creates parents", req: protocol.WriteRequest{Path: "x/y/z.txt", Content: "z"},
			want: protocol.WriteResult{Path: "x/y/z.txt", Bytes: 1, Created: true, Mode: 0o644}, content: "z", perm: 0o644},
		{name: "replace keeps mode",
			setup: func(t *testing.T, ws string) { writeMode(t, filepath.Join(ws, "a"), "old", 0o600) },
			req:   protocol.WriteRequest{Path: "a", Content: "new"},
			want:  protocol.WriteResult{Path: "a", Bytes: 3, Mode: 0o600}, content: "new", perm: 0o600},
		{name: "explicit mode",
			setup: func(t *testing.T, ws string) { writeMode(t, filepath.Join(ws, "a"), "old", 0o600) },
			req:   protocol.WriteRequest{Path: "a", Content: "#!/bin/sh\n", Mode: 0o755},
			want:  protocol.WriteResult{Path: "a", Bytes: 10, Mode: 0o755}, content: "#!/bin/sh\n", perm: 0o755},
		{name: "empty content", req: protocol.WriteRequest{Path: "e"},
			want: protocol.WriteResult{Path: "e", Created: true, Mode: 0o644}, content: "", perm: 0o644},
		{name: "base64", req: protocol.WriteRequest{Path: "b", Content: b64("\x00\xff"), Encoding: "base64"},
			want: protocol.WriteResult{Path: "b", Bytes: 2, Created: true, Mode: 0o644}, content: "\x00\xff", perm: 0o644},
		{name: "base64 without padding", req: protocol.WriteRequest{Path: "b", Content: "aGk", Encoding: "base64"},
			want: protocol.WriteResult{Path: "b", Bytes: 2, Created: true, Mode: 0o644}, content: "hi", perm: 0o644},
		{name: "through a symlink keeps the link",
			setup: func(t *testing.T, ws string) {
				writeFiles(t, ws, map[string]string{"real/t.txt": "old"})
				symlink(t, "real/t.txt", filepath.Join(ws, "link"))
			},
			req:  protocol.WriteRequest{Path: "link", Content: "new"},
			want: protocol.WriteResult{Path: "link", Bytes: 3, Mode: 0o644}, file: "real/t.txt", content: "new", perm: 0o644},
		{name: "through a dangling symlink creates its target",
			setup: func(t *testing.T, ws string) {
				writeFiles(t, ws, map[string]string{"d/": ""})
				symlink(t, "../new.txt", filepath.Join(ws, "d", "link"))
			},
			req:  protocol.WriteRequest{Path: "d/link", Content: "n"},
			want: protocol.WriteResult{Path: "d/link", Bytes: 1, Created: true, Mode: 0o644}, file: "new.txt", content: "n", perm: 0o644},
		{name: "bad base64", req: protocol.WriteRequest{Path: "b", Content: "!!!", Encoding: "base64"},
			code: protocol.CodeInvalid, msgParts: []string{"not valid base64"}},
		{name: "unknown encoding", req: protocol.WriteRequest{Path: "b", Content: "x", Encoding: "utf16"},
			code: protocol.CodeInvalid, msgParts: []string{`"utf16"`}},
		{name: "above the cap", req: protocol.WriteRequest{Path: "big", Content: strings.Repeat("x", 65)},
			code: protocol.CodeTooLarge, msgParts: []string{"65 bytes", "64 bytes write cap"}},
		{name: "base64 above the cap", req: protocol.WriteRequest{Path: "big", Content: b64(strings.Repeat("x", 65)), Encoding: "base64"},
			code: protocol.CodeTooLarge},
		{name: "bad mode", req: protocol.WriteRequest{Path: "m", Content: "x", Mode: 0o10000},
			code: protocol.CodeInvalid, msgParts: []string{"not a permission mode"}},
		{name: "onto a directory",
			setup: func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"d/": ""}) },
			req:   protocol.WriteRequest{Path: "d", Content: "x"},
			code:  protocol.CodeIsDir, msgParts: []string{"is a directory"}},
		{name: "onto a named pipe",
			setup: func(t *testing.T, ws string) {
				if err := syscall.Mkfifo(filepath.Join(ws, "p"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			req:  protocol.WriteRequest{Path: "p", Content: "x"},
			code: protocol.CodeInvalid, msgParts: []string{"named pipe"}},
		{name: "parent is a file",
			setup: func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"f": ""}) },
			req:   protocol.WriteRequest{Path: "f/x", Content: "x"},
			code:  protocol.CodeNotDir},
		{name: "symlink loop",
			setup: func(t *testing.T, ws string) { symlink(t, "loop", filepath.Join(ws, "loop")) },
			req:   protocol.WriteRequest{Path: "loop", Content: "x"},
			code:  protocol.CodeInvalid, msgParts: []string{"symbolic links"}},
		{name: "empty path", req: protocol.WriteRequest{Content: "x"}, code: protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, files.Options{MaxWriteBytes: 64})
			if tt.setup != nil {
				tt.setup(t, ws)
			}
			got, err := s.Write(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msgParts...)
			if left := tempFiles(t, ws); len(left) > 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
			if tt.code != "" {
				return
			}
			tt.want.Path = filepath.Join(ws, tt.want.Path)
			if got != tt.want {
				t.Errorf("Write\n got %+v\nwant %+v", got, tt.want)
			}
			file := tt.file
			if file == "" {
				file = tt.req.Path
			}
			checkFile(t, filepath.Join(ws, file), tt.content, tt.perm)
		})
	}
}

func TestWriteThroughSymlinkKeepsLink(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"t": "old"})
	symlink(t, "t", filepath.Join(ws, "l"))
	if _, err := s.Write(t.Context(), protocol.WriteRequest{Path: "l", Content: "new"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(ws, "l"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("l is no longer a symlink: %v, %v", fi, err)
	}
}

func TestWritePermissionDenied(t *testing.T) {
	t.Parallel()
	skipIfRoot(t)
	s, ws := newService(t, files.Options{})
	ro := filepath.Join(ws, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	_, err := s.Write(t.Context(), protocol.WriteRequest{Path: "ro/x", Content: "x"})
	checkErr(t, err, protocol.CodePermission, "permission denied")
}

// writeMode creates p with content and exactly mode perm.
func writeMode(t *testing.T, p, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

// checkFile fails unless p is a regular file with content and perm.
func checkFile(t *testing.T, p, content string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %v, want a regular file with %v", p, fi.Mode(), perm)
	}
	if got := readFile(t, p); got != content {
		t.Errorf("%s: content %q, want %q", p, got, content)
	}
}

// TestWriteInPlaceInReadOnlyDirectory covers a file the user may write in
// a directory the user may not: no temporary file can be created next to
// it, so the write falls back to rewriting it in place.
func TestWriteInPlaceInReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	skipIfRoot(t)
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"ro/f": "old"})
	chmod(t, filepath.Join(ws, "ro"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "ro"), 0o755) })
	if _, err := s.Write(t.Context(), protocol.WriteRequest{Path: "ro/f", Content: "new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(t.Context(), protocol.EditRequest{Path: "ro/f", OldString: "new", NewString: "newer"}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(ws, "ro/f"), "newer", 0o644)
	_, err := s.Write(t.Context(), protocol.WriteRequest{Path: "ro/g", Content: "x"})
	checkErr(t, err, protocol.CodePermission)
}
