package workspace_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestOpenAsUser: a file of a real loop-mounted workspace opens from the
// host only as the sandbox user (1000:1000) could open it, never through
// a symlink or out of the workspace, and every thread of this process
// keeps root's file system ids afterwards.
func TestOpenAsUser(t *testing.T) {
	m := openLoop(t)
	mnt, err := m.Create(t.Context(), "host-open", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("host-open") })

	// The tree, made as root and handed to the sandbox user where a
	// sandbox would own it.
	mk := func(name, content string, mode os.FileMode, uid int) {
		t.Helper()
		p := filepath.Join(mnt, name)
		if strings.HasSuffix(name, "/") {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err == nil {
			err = os.Chown(p, uid, uid)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("a.txt", "alpha", 0o644, 1000)
	mk("sub/", "", 0o755, 1000)
	mk("sub/b.txt", "beta", 0o600, 1000)
	mk("locked/", "", 0o755, 1000)
	mk("locked/c.txt", "gamma", 0o644, 1000)
	mk("secret", "own file, no read bit", 0o000, 1000)
	mk("rootonly", "root's", 0o600, 0)
	if err := os.Chmod(filepath.Join(mnt, "locked"), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(mnt, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(mnt, "abslink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(mnt, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	opens := map[string]string{"a.txt": "alpha", "sub/b.txt": "beta", "sub/../a.txt": "alpha"}
	for name, want := range opens {
		f, err := m.OpenAsUser("host-open", name)
		if err != nil {
			t.Errorf("open %s: %v", name, err)
			continue
		}
		got, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(got) != want {
			t.Errorf("read %s: %q, %v; want %q", name, got, err, want)
		}
	}

	refusals := []struct {
		name string
		want error
		why  string
	}{
		{"secret", syscall.EACCES, "the sandbox user's own file without a read bit (root could read it)"},
		{"locked/c.txt", syscall.EACCES, "a file in a directory the sandbox user cannot search"},
		{"rootonly", syscall.EACCES, "root's file"},
		{"link", syscall.ELOOP, "a symlink inside the workspace"},
		{"abslink", syscall.ELOOP, "an absolute symlink (the sandbox's /, not the host's)"},
		{"../disk.ext4", syscall.EXDEV, "a name above the workspace root"},
		{"/etc/passwd", syscall.EXDEV, "an absolute name"},
		{"missing", syscall.ENOENT, "a missing file"},
	}
	for _, r := range refusals {
		f, err := m.OpenAsUser("host-open", r.name)
		if err == nil {
			f.Close()
			t.Errorf("%s (%s) opened; want %v", r.name, r.why, r.want)
		} else if !errors.Is(err, r.want) {
			t.Errorf("%s (%s): %v; want %v", r.name, r.why, err, r.want)
		}
	}
	if _, err := m.OpenAsUser("no-such-sandbox", "a.txt"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("another sandbox's id: %v; want ENOENT", err)
	}
	if _, err := m.OpenAsUser("../host-open/mnt", "a.txt"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("an id that is a path: %v; want ErrUnsupported", err)
	}
	// A named pipe opens without waiting for a writer; telling it from a
	// file is the caller's part.
	if f, err := m.OpenAsUser("host-open", "fifo"); err != nil {
		t.Errorf("fifo: %v", err)
	} else if fi, err := f.Stat(); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("fifo: %v, %v", fi, err)
		f.Close()
	} else {
		f.Close()
	}

	// Many opens at once, allowed and refused: no thread may keep the
	// sandbox user's ids, or root's own files would stop opening.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				for _, name := range []string{"a.txt", "secret"} {
					if f, err := m.OpenAsUser("host-open", name); err == nil {
						f.Close()
					}
				}
			}
		})
	}
	wg.Wait()
	sandboxtest.AssertRootFSIDs(t)
}
