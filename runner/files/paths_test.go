package files_test

import (
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestResolvePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		workspace, path, want string
		code                  protocol.Code
	}{
		{"/workspace", "a.txt", "/workspace/a.txt", ""},
		{"/workspace", "./a/../b/", "/workspace/b", ""},
		{"/workspace", ".", "/workspace", ""},
		// Leaving the workspace is allowed: the container is the boundary.
		{"/workspace", "../etc/passwd", "/etc/passwd", ""},
		{"/workspace", "/etc//passwd/", "/etc/passwd", ""},
		{"/workspace", "/../..", "/", ""},
		{"/workspace/", "x", "/workspace/x", ""},
		{"", "x", "/workspace/x", ""}, // the default workspace
		{"/workspace", "", "", protocol.CodeInvalid},
		{"/workspace", "a\x00b", "", protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.workspace+"|"+tt.path, func(t *testing.T) {
			t.Parallel()
			got, err := files.ResolvePath(files.New(files.Options{Workspace: tt.workspace}), tt.path)
			checkErr(t, err, tt.code)
			if got != tt.want {
				t.Errorf("resolve(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}
