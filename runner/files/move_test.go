package files_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestMove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  protocol.MoveRequest
		want map[string]string // path → content ("/" suffix: directory) after the move
		gone []string          // paths that must not exist after the move
		code protocol.Code
		msg  []string
	}{
		{name: "rename a file", req: protocol.MoveRequest{From: "a.txt", To: "c.txt"},
			want: map[string]string{"c.txt": "a"}, gone: []string{"a.txt"}},
		{name: "into new directories", req: protocol.MoveRequest{From: "a.txt", To: "x/y/a.txt"},
			want: map[string]string{"x/y/a.txt": "a"}, gone: []string{"a.txt"}},
		{name: "a directory", req: protocol.MoveRequest{From: "dir", To: "moved"},
			want: map[string]string{"moved/f": "f"}, gone: []string{"dir"}},
		{name: "a symlink, not its target", req: protocol.MoveRequest{From: "link", To: "link2"},
			want: map[string]string{"a.txt": "a"}, gone: []string{"link"}},
		{name: "onto itself", req: protocol.MoveRequest{From: "a.txt", To: "./a.txt"},
			want: map[string]string{"a.txt": "a"}},
		{name: "overwrite a file", req: protocol.MoveRequest{From: "a.txt", To: "b.txt", Overwrite: true},
			want: map[string]string{"b.txt": "a"}, gone: []string{"a.txt"}},
		{name: "overwrite an empty directory", req: protocol.MoveRequest{From: "dir", To: "empty", Overwrite: true},
			want: map[string]string{"empty/f": "f"}, gone: []string{"dir"}},
		{name: "existing target", req: protocol.MoveRequest{From: "a.txt", To: "b.txt"},
			want: map[string]string{"a.txt": "a", "b.txt": "b"}, code: protocol.CodeExists, msg: []string{"overwrite"}},
		{name: "file over a directory", req: protocol.MoveRequest{From: "a.txt", To: "dir", Overwrite: true},
			code: protocol.CodeIsDir, msg: []string{"dir/a.txt"}},
		{name: "directory over a file", req: protocol.MoveRequest{From: "dir", To: "b.txt", Overwrite: true},
			code: protocol.CodeNotDir},
		{name: "over a non-empty directory", req: protocol.MoveRequest{From: "empty", To: "dir", Overwrite: true},
			code: protocol.CodeExists, msg: []string{"not empty"}},
		{name: "directory into itself", req: protocol.MoveRequest{From: "dir", To: "dir/sub"},
			code: protocol.CodeInvalid, msg: []string{"into itself"}},
		{name: "missing source", req: protocol.MoveRequest{From: "nope", To: "x"}, code: protocol.CodeNotFound},
		{name: "workspace root", req: protocol.MoveRequest{From: ".", To: "x"}, code: protocol.CodeInvalid},
		{name: "empty destination", req: protocol.MoveRequest{From: "a.txt"}, code: protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, files.Options{})
			writeFiles(t, ws, map[string]string{"a.txt": "a", "b.txt": "b", "dir/f": "f", "empty/": ""})
			symlink(t, "a.txt", filepath.Join(ws, "link"))
			got, err := s.Move(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			for name, content := range tt.want {
				if got := readFile(t, filepath.Join(ws, name)); got != content {
					t.Errorf("%s = %q, want %q", name, got, content)
				}
			}
			for _, name := range tt.gone {
				if _, err := os.Lstat(filepath.Join(ws, name)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s still exists (%v)", name, err)
				}
			}
			if tt.code == "" && got.Path != filepath.Join(ws, tt.req.To) {
				t.Errorf("Path = %q, want the destination", got.Path)
			}
		})
	}
}

// TestMoveAcrossFileSystems moves between the workspace and /dev/shm,
// which is a tmpfs in most containers, so rename(2) fails with EXDEV.
func TestMoveAcrossFileSystems(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	other, err := os.MkdirTemp("/dev/shm", "sandgate-files-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	if device(t, ws) == device(t, other) {
		t.Skip("/dev/shm is on the workspace's file system")
	}
	writeFiles(t, ws, map[string]string{"f": "data", "d/x": ""})
	writeMode(t, filepath.Join(ws, "f"), "data", 0o750)
	symlink(t, "f", filepath.Join(ws, "l"))

	got, err := s.Move(t.Context(), protocol.MoveRequest{From: "f", To: filepath.Join(other, "f")})
	checkErr(t, err, "")
	checkFile(t, got.Path, "data", 0o750)
	if _, err := os.Lstat(filepath.Join(ws, "f")); err == nil {
		t.Error("source still exists")
	}
	got, err = s.Move(t.Context(), protocol.MoveRequest{From: "l", To: filepath.Join(other, "l")})
	checkErr(t, err, "")
	if got.Type != protocol.TypeSymlink || got.Target != "f" {
		t.Errorf("moved link = %+v", got)
	}
	_, err = s.Move(t.Context(), protocol.MoveRequest{From: "d", To: filepath.Join(other, "d")})
	checkErr(t, err, protocol.CodeUnsupported, "cp -a")
}

// device returns the device number of the file system holding p.
func device(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Dev)
}
