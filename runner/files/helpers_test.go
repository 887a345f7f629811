package files_test

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

// newService returns a Service on a fresh workspace and the workspace.
func newService(t *testing.T, opts files.Options) (*files.Service, string) {
	t.Helper()
	ws := t.TempDir()
	opts.Workspace = ws
	return files.New(opts), ws
}

// writeFiles creates files below dir from name → content; a name ending
// in "/" is a directory.
func writeFiles(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	for name, content := range tree {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		// WriteFile's mode passes through the umask; tests want it exact.
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// symlink creates link pointing at target.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the content of p.
func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkErr fails unless err has code, or is nil when code is "". Every
// failure must be a *protocol.Error: anything else reaches the user as an
// internal error without a useful message.
func checkErr(t *testing.T, err error, code protocol.Code, msgParts ...string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		t.Fatalf("error = %v (%T), want a *protocol.Error with code %s", err, err, code)
	}
	if perr.Code != code {
		t.Fatalf("code = %s (%v), want %s", perr.Code, perr, code)
	}
	for _, part := range msgParts {
		if !strings.Contains(perr.Message, part) {
			t.Errorf("message %q does not contain %q", perr.Message, part)
		}
	}
}

// tempFiles returns the temporary files of atomic writes left below dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".sandgate-tmp") {
			left = append(left, p)
		}
		return nil
	})
	return left
}

// skipIfRoot skips tests of permission errors, which root never gets.
func skipIfRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("root bypasses file permissions")
	}
}

// readLink returns the target of the symlink p.
func readLink(t *testing.T, p string) string {
	t.Helper()
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// decodeB64 decodes standard base64.
func decodeB64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
