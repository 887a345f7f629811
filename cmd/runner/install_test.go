package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

func TestInstall(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "runner")
	content := []byte("\x7fELF pretend runner")
	if err := os.WriteFile(src, content, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dest func(dir string) string // makes what the case needs under dir
		want string                  // substring of the error; empty: installed
	}{
		{"into an existing dir", func(dir string) string { return filepath.Join(dir, "runner") }, ""},
		{"creates the dir", func(dir string) string { return filepath.Join(dir, "a", "b", "runner") }, ""},
		{"replaces a read-only file", func(dir string) string {
			dest := filepath.Join(dir, "runner")
			writeFile(t, dest, "old runner", 0o555)
			return dest
		}, ""},
		{"dest is a directory", func(dir string) string { return dir }, "is a directory; give the file's path"},
		{"parent is a file", func(dir string) string {
			writeFile(t, filepath.Join(dir, "file"), "x", 0o644)
			return filepath.Join(dir, "file", "runner")
		}, "create " + "DIR/file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dest := tt.dest(dir)
			err := install(src, dest)
			if tt.want != "" {
				want := strings.ReplaceAll(tt.want, "DIR", dir)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("install to %s: %v, want an error containing %q", dest, err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("install to %s: %v", dest, err)
			}
			got, err := os.ReadFile(dest)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("installed %q, %v; want the source's bytes", got, err)
			}
			if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o555 {
				t.Errorf("mode %v, want 0555", fi.Mode().Perm())
			}
			// Nothing else is left beside it: no temporary file.
			if ents, _ := os.ReadDir(filepath.Dir(dest)); len(ents) != 1 {
				t.Errorf("%s holds %d entries, want only the runner", filepath.Dir(dest), len(ents))
			}
		})
	}
	if err := install(filepath.Join(t.TempDir(), "missing"), filepath.Join(t.TempDir(), "runner")); err == nil || !strings.Contains(err.Error(), "open the runner to copy") {
		t.Errorf("install of a missing source: %v", err)
	}
	if err := runInstall(nil); err == nil || !strings.Contains(err.Error(), "usage: runner install DEST") {
		t.Errorf("runInstall without DEST: %v, want usage", err)
	}
}

// TestInstallSelf runs `runner install` of the real binary, which copies
// itself, and then the copy.
func TestInstallSelf(t *testing.T) {
	t.Parallel()
	bin := sandboxtest.RunnerBinary(t)
	dest := filepath.Join(t.TempDir(), "shared", "runner")
	if out, err := exec.Command(bin, "install", dest).CombinedOutput(); err != nil {
		t.Fatalf("runner install %s: %v\n%s", dest, err, out)
	}
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("installed %d bytes (%v), want the runner's %d", len(got), err, len(want))
	}
	// The copy runs: it installs itself again.
	again := filepath.Join(t.TempDir(), "runner")
	if out, err := exec.Command(dest, "install", again).CombinedOutput(); err != nil {
		t.Fatalf("installed runner: install %s: %v\n%s", again, err, out)
	}
}
