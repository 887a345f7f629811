package files_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestRemove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     protocol.RemoveRequest
		removed int
		gone    string // path that must be gone; default req.Path
		kept    string // path that must remain
		code    protocol.Code
		msg     []string
	}{
		{name: "file", req: protocol.RemoveRequest{Path: "a.txt"}, removed: 1},
		{name: "empty directory", req: protocol.RemoveRequest{Path: "empty"}, removed: 1},
		{name: "tree", req: protocol.RemoveRequest{Path: "tree", Recursive: true}, removed: 5},
		{name: "recursive on a file", req: protocol.RemoveRequest{Path: "a.txt", Recursive: true}, removed: 1},
		{name: "symlink, not its target", req: protocol.RemoveRequest{Path: "link", Recursive: true}, removed: 1, kept: "tree/x"},
		{name: "non-empty directory", req: protocol.RemoveRequest{Path: "tree"},
			kept: "tree/x", code: protocol.CodeInvalid, msg: []string{"not empty", "recursive"}},
		{name: "missing", req: protocol.RemoveRequest{Path: "nope"}, code: protocol.CodeNotFound},
		{name: "workspace", req: protocol.RemoveRequest{Path: ".", Recursive: true},
			kept: "a.txt", code: protocol.CodeInvalid, msg: []string{"refusing"}},
		{name: "parent of the workspace", req: protocol.RemoveRequest{Path: "..", Recursive: true},
			kept: "a.txt", code: protocol.CodeInvalid},
		{name: "root", req: protocol.RemoveRequest{Path: "/", Recursive: true}, code: protocol.CodeInvalid},
		{name: "empty path", req: protocol.RemoveRequest{}, code: protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, files.Options{})
			writeFiles(t, ws, map[string]string{"a.txt": "a", "empty/": "", "tree/x": "", "tree/sub/y": "", "tree/sub/z": ""})
			symlink(t, "tree", filepath.Join(ws, "link"))
			got, err := s.Remove(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			if tt.kept != "" {
				if _, err := os.Lstat(filepath.Join(ws, tt.kept)); err != nil {
					t.Errorf("%s is gone: %v", tt.kept, err)
				}
			}
			if tt.code != "" {
				return
			}
			want := protocol.RemoveResult{Path: filepath.Join(ws, tt.req.Path), Removed: tt.removed}
			if got != want {
				t.Errorf("Remove = %+v, want %+v", got, want)
			}
			if _, err := os.Lstat(want.Path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s still exists (%v)", want.Path, err)
			}
		})
	}
}
