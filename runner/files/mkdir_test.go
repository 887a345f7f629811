package files_test

import (
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestMkdir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  protocol.MkdirRequest
		perm uint32 // 0: not checked, the umask decides
		code protocol.Code
		msg  []string
	}{
		{name: "nested", req: protocol.MkdirRequest{Path: "a/b/c"}},
		{name: "exact mode", req: protocol.MkdirRequest{Path: "private", Mode: 0o700}, perm: 0o700},
		{name: "mode beats the umask", req: protocol.MkdirRequest{Path: "shared", Mode: 0o777}, perm: 0o777},
		{name: "existing directory", req: protocol.MkdirRequest{Path: "exists"}},
		{name: "symlink to a directory", req: protocol.MkdirRequest{Path: "dirlink"}},
		{name: "existing file", req: protocol.MkdirRequest{Path: "file"},
			code: protocol.CodeExists, msg: []string{"a file already exists"}},
		{name: "below a file", req: protocol.MkdirRequest{Path: "file/sub"}, code: protocol.CodeNotDir},
		{name: "bad mode", req: protocol.MkdirRequest{Path: "m", Mode: 0o20000}, code: protocol.CodeInvalid},
		{name: "empty path", req: protocol.MkdirRequest{}, code: protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, files.Options{})
			writeFiles(t, ws, map[string]string{"exists/": "", "file": ""})
			symlink(t, "exists", filepath.Join(ws, "dirlink"))
			got, err := s.Mkdir(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			if tt.code != "" {
				return
			}
			if got.Path != filepath.Join(ws, tt.req.Path) {
				t.Errorf("Path = %q", got.Path)
			}
			if got.Type != protocol.TypeDir && got.Type != protocol.TypeSymlink {
				t.Errorf("Type = %q, want a directory", got.Type)
			}
			if tt.perm != 0 && got.Perm != tt.perm {
				t.Errorf("Perm = %o, want %o", got.Perm, tt.perm)
			}
		})
	}
}
