package files_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

// listTree builds the tree the List tests walk: hidden entries, a
// symlink to a directory and a symlink loop.
func listTree(t *testing.T, ws string) {
	t.Helper()
	writeFiles(t, ws, map[string]string{
		"b.txt":         "bbb",
		"a/x.txt":       "x",
		"a/deep/y.txt":  "y",
		".hidden/h.txt": "h",
		".dot":          "",
		"empty/":        "",
	})
	symlink(t, "a", filepath.Join(ws, "link"))
	symlink(t, ".", filepath.Join(ws, "loop"))
}

func TestList(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{MaxListEntries: 50})
	listTree(t, ws)
	tests := []struct {
		name      string
		req       protocol.ListRequest
		want      []string // "relative/path type"
		truncated bool
		code      protocol.Code
		msg       []string
	}{
		{name: "default depth", req: protocol.ListRequest{Path: "."},
			want: []string{"a dir", "b.txt file", "empty dir", "link symlink", "loop symlink"}},
		{name: "hidden", req: protocol.ListRequest{Path: ws, Hidden: true},
			want: []string{".dot file", ".hidden dir", "a dir", "b.txt file", "empty dir", "link symlink", "loop symlink"}},
		{name: "depth 2", req: protocol.ListRequest{Path: ".", Depth: 2},
			want: []string{"a dir", "a/deep dir", "a/x.txt file", "b.txt file", "empty dir", "link symlink", "loop symlink"}},
		{name: "deep and hidden, links not followed", req: protocol.ListRequest{Path: ".", Depth: 100, Hidden: true},
			want: []string{".dot file", ".hidden dir", ".hidden/h.txt file", "a dir", "a/deep dir", "a/deep/y.txt file",
				"a/x.txt file", "b.txt file", "empty dir", "link symlink", "loop symlink"}},
		{name: "cap", req: protocol.ListRequest{Path: ".", MaxEntries: 2},
			want: []string{"a dir", "b.txt file"}, truncated: true},
		{name: "cap that fits exactly", req: protocol.ListRequest{Path: ".", MaxEntries: 5},
			want: []string{"a dir", "b.txt file", "empty dir", "link symlink", "loop symlink"}},
		{name: "cap inside a subdirectory", req: protocol.ListRequest{Path: ".", Depth: 3, MaxEntries: 3},
			want: []string{"a dir", "a/deep dir", "a/deep/y.txt file"}, truncated: true},
		{name: "through a symlinked root", req: protocol.ListRequest{Path: "link"},
			want: []string{"link/deep dir", "link/x.txt file"}},
		{name: "empty directory", req: protocol.ListRequest{Path: "empty"}, want: []string{}},
		{name: "a file", req: protocol.ListRequest{Path: "b.txt"},
			code: protocol.CodeNotDir, msg: []string{"not a directory", "read it"}},
		{name: "missing", req: protocol.ListRequest{Path: "nope"}, code: protocol.CodeNotFound},
		{name: "negative depth", req: protocol.ListRequest{Path: ".", Depth: -1}, code: protocol.CodeInvalid},
		{name: "empty path", req: protocol.ListRequest{}, code: protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.List(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			if tt.code != "" {
				return
			}
			if got.Entries == nil {
				t.Error("Entries is nil; it must encode as [] in JSON")
			}
			names := []string{}
			for _, e := range got.Entries {
				rel, _ := filepath.Rel(ws, e.Path)
				names = append(names, rel+" "+strings.TrimSuffix(e.Type, "ectory"))
			}
			if !reflect.DeepEqual(names, tt.want) || got.Truncated != tt.truncated {
				t.Errorf("List = %q truncated=%v, want %q truncated=%v", names, got.Truncated, tt.want, tt.truncated)
			}
		})
	}
}

func TestListEntryInfo(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	listTree(t, ws)
	got, err := s.List(t.Context(), protocol.ListRequest{Path: "."})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]protocol.FileInfo{}
	for _, e := range got.Entries {
		byName[e.Name] = e
	}
	if f := byName["b.txt"]; f.Size != 3 || f.Mode != "-rw-r--r--" || f.Perm != 0o644 || f.ModTime.IsZero() {
		t.Errorf("b.txt = %+v", f)
	}
	if l := byName["link"]; l.Type != protocol.TypeSymlink || l.Target != "a" {
		t.Errorf("link = %+v, want a symlink to a", l)
	}
	if got.Path != ws {
		t.Errorf("Path = %q, want %q", got.Path, ws)
	}
}

func TestListSkipsUnreadableSubdirectory(t *testing.T) {
	t.Parallel()
	skipIfRoot(t)
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"locked/secret": "", "open/f": ""})
	if err := os.Chmod(filepath.Join(ws, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(ws, "locked"), 0o755) })
	got, err := s.List(t.Context(), protocol.ListRequest{Path: ".", Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 3 {
		t.Errorf("entries = %+v, want locked, open, open/f", got.Entries)
	}
}
