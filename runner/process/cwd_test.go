package process_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/process"
)

// FuzzWorkdir checks that no working directory a request can name
// resolves to a path under /proc, and that what resolves is a clean
// absolute directory.
func FuzzWorkdir(f *testing.F) {
	ws := f.TempDir()
	for _, link := range [][2]string{{"/proc/self", "p"}, {"p/cwd", "q"}, {"..", "up"}, {"/proc/self/fd/0", "fd"}, {"/", "root"}} {
		if err := os.Symlink(link[0], filepath.Join(ws, link[1])); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		f.Fatal(err)
	}
	m := process.NewManager(process.Options{Workspace: ws})
	f.Cleanup(m.Close)
	for _, s := range []string{"", ".", "d", "p", "q", "fd", "up/../proc", "root/proc/self", "/proc", "/proc/", "//proc", "/./proc/1", "/tmp/../proc", "d/../../../../../proc/self/cwd", "root/../proc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cwd string) {
		dir, err := m.Workdir(cwd)
		if err != nil {
			return
		}
		if dir == "/proc" || strings.HasPrefix(dir, "/proc/") {
			t.Fatalf("Workdir(%q) = %q, under /proc", cwd, dir)
		}
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
			t.Fatalf("Workdir(%q) = %q, not clean and absolute", cwd, dir)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("Workdir(%q) = %q, not a directory: %v", cwd, dir, err)
		}
		if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
			t.Fatalf("Workdir(%q) = %q, which resolves to %q (%v)", cwd, dir, real, err)
		}
	})
}
