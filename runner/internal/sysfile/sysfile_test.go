package sysfile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/runner/internal/sysfile"
)

// TestReadFile: the same bytes as os.ReadFile for a generated file, a
// file larger than the first read and an empty one, and the same kind of
// error for a missing one.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // several reads' worth
	for name, content := range map[string][]byte{"big": big, "empty": nil, "small": []byte("oom_kill 3\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/proc/self/stat", "/proc/self/environ", filepath.Join(dir, "big"), filepath.Join(dir, "empty"), filepath.Join(dir, "small")} {
		got, err := sysfile.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// /proc/self/stat changes between two reads (times, counters);
		// its length and command name do not move much, so compare the
		// stable head.
		if path == "/proc/self/stat" {
			got, want = got[:bytes.IndexByte(got, ')')+1], want[:bytes.IndexByte(want, ')')+1]
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes %.40q, os.ReadFile %d bytes %.40q", path, len(got), got, len(want), want)
		}
	}
	_, err := sysfile.ReadFile(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "missing") {
		t.Errorf("missing file: %v; want a *fs.PathError that is fs.ErrNotExist", err)
	}
}
