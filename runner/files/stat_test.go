package files_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestStat(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"f": "12345", "d/": "", "tmp/": "", "suid": "", "nox": ""})
	chmod(t, filepath.Join(ws, "d"), 0o750)
	chmod(t, filepath.Join(ws, "tmp"), 0o777|os.ModeSticky)
	chmod(t, filepath.Join(ws, "suid"), 0o755|os.ModeSetuid)
	chmod(t, filepath.Join(ws, "nox"), 0o644|os.ModeSetgid)
	symlink(t, "f", filepath.Join(ws, "l"))
	symlink(t, "missing", filepath.Join(ws, "dangling"))

	tests := []struct {
		path string
		typ  string
		mode string
		perm uint32
		size int64
		link string
		code protocol.Code
	}{
		{path: "f", typ: "file", mode: "-rw-r--r--", perm: 0o644, size: 5},
		{path: "d", typ: "directory", mode: "drwxr-x---", perm: 0o750},
		{path: "tmp", typ: "directory", mode: "drwxrwxrwt", perm: 0o1777},
		{path: "suid", typ: "file", mode: "-rwsr-xr-x", perm: 0o4755},
		{path: "nox", typ: "file", mode: "-rw-r-Sr--", perm: 0o2644},
		{path: "l", typ: "symlink", mode: "lrwxrwxrwx", perm: 0o777, size: 1, link: "f"},
		{path: "dangling", typ: "symlink", mode: "lrwxrwxrwx", perm: 0o777, size: 7, link: "missing"},
		{path: "nope", code: protocol.CodeNotFound},
		{path: "f/x", code: protocol.CodeNotDir},
		{path: "", code: protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			got, err := s.Stat(t.Context(), protocol.PathRequest{Path: tt.path})
			checkErr(t, err, tt.code)
			if tt.code != "" {
				return
			}
			want := protocol.FileInfo{Path: filepath.Join(ws, tt.path), Name: filepath.Base(tt.path), Type: tt.typ,
				Size: got.Size, Mode: tt.mode, Perm: tt.perm, ModTime: got.ModTime, Target: tt.link}
			if tt.typ != "directory" {
				want.Size = tt.size
			}
			if got != want || got.ModTime.IsZero() {
				t.Errorf("Stat(%q)\n got %+v\nwant %+v", tt.path, got, want)
			}
		})
	}
}

func TestStatRoot(t *testing.T) {
	t.Parallel()
	s := files.New(files.Options{})
	got, err := s.Stat(t.Context(), protocol.PathRequest{Path: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != "/" || got.Name != "/" || got.Type != protocol.TypeDir {
		t.Errorf("Stat(/) = %+v", got)
	}
}

// chmod sets the mode of p exactly.
func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
