package workspace_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox/workspace"
)

// openLoop returns a Manager on the loop backend, or skips where the host
// cannot loop-mount (not root); under CI the skip is a failure.
func openLoop(t *testing.T) *workspace.Manager {
	t.Helper()
	m, err := workspace.Open(t.Context(), workspace.Options{Root: filepath.Join(t.TempDir(), "ws"), Backend: workspace.Auto, UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if m.Backend() != workspace.Loop {
		if os.Getenv("CI") != "" {
			t.Fatalf("loop workspaces unavailable under CI: %s", m.Reason())
		}
		t.Skipf("loop workspaces unavailable: %s", m.Reason())
	}
	return m
}

// allocated returns the host disk bytes a file really uses.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestCreateIsSparseAndOwned(t *testing.T) {
	m := openLoop(t)
	mnt, err := m.Create(t.Context(), "sparse", 4<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("sparse") })
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 1000 || st.Gid != 1000 {
		t.Errorf("workspace root owned by %d:%d, want 1000:1000", st.Uid, st.Gid)
	}
	// A 4 GiB workspace must cost (almost) nothing until used: only the
	// file system's metadata is written.
	img := filepath.Join(m.Dir("sparse"), "disk.ext4")
	if got := allocated(t, img); got > 128<<20 {
		t.Errorf("empty 4 GiB workspace allocates %d MiB on the host, want under 128 MiB", got>>20)
	}
	if _, err := m.Create(t.Context(), "sparse", 4<<30); err == nil {
		t.Error("second Create of the same id succeeded; it must refuse to adopt another sandbox's files")
	}
}

// TestFullWorkspaceIsENOSPC fills a workspace: the writer gets ENOSPC at
// about its size, the host file never grows past it, and deleting the
// file hands the space back to the host (discard).
func TestFullWorkspaceIsENOSPC(t *testing.T) {
	m := openLoop(t)
	const size = 64 << 20
	mnt, err := m.Create(t.Context(), "full", size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("full") })
	fill := filepath.Join(mnt, "fill")
	f, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	written, err := io.Copy(f, io.LimitReader(zeros{}, 2*size))
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing %d bytes into a %d-byte workspace: err = %v after %d bytes, want ENOSPC", 2*size, size, err, written)
	}
	if written < size/2 {
		t.Errorf("ENOSPC after %d bytes; a %d-byte workspace should hold most of its size", written, size)
	}
	img := filepath.Join(m.Dir("full"), "disk.ext4")
	full := allocated(t, img)
	if full > size {
		t.Errorf("host image allocates %d bytes, more than the workspace size %d", full, size)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	// Online discard happens at the next journal commit (5 s by default).
	deadline := time.Now().Add(60 * time.Second)
	for allocated(t, img) > full/2 {
		if time.Now().After(deadline) {
			t.Fatalf("after deleting the file the host image still allocates %d of %d bytes; discard did not hand the space back", allocated(t, img), full)
		}
		time.Sleep(200 * time.Millisecond)
		syscall.Sync()
	}
}

// TestRemoveDoesNotFollowPlantedSymlinks plants symlinks to a host
// directory inside a workspace; removing the workspace must leave the
// host directory alone.
func TestRemoveDoesNotFollowPlantedSymlinks(t *testing.T) {
	m := openLoop(t)
	mnt, err := m.Create(t.Context(), "planted", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	canary := filepath.Join(victim, "canary")
	if err := os.WriteFile(canary, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(mnt, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(mnt, "root")); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("planted"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Fatalf("host file behind a planted symlink is gone: %v", err)
	}
	if _, err := os.Lstat(m.Dir("planted")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("workspace dir still there after Remove: %v", err)
	}
	ids, err := m.List()
	if err != nil || len(ids) != 0 {
		t.Errorf("List after Remove = %v, %v; want none", ids, err)
	}
}

// TestReadyKeepsFiles checks that a workspace found again (as for a
// replacement container) has its files, and is remounted if its mount
// went away (host reboot).
func TestReadyKeepsFiles(t *testing.T) {
	m := openLoop(t)
	mnt, err := m.Create(t.Context(), "keep", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("keep") })
	if err := os.WriteFile(filepath.Join(mnt, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	again, err := m.Ready("keep")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(again, "notes.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("after remount notes.txt = %q, %v; want hello", b, err)
	}
	if _, err := m.Ready("missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Ready(missing) = %v, want ErrNotExist", err)
	}
}

func TestParseBackend(t *testing.T) {
	for in, want := range map[string]workspace.Backend{"": workspace.Auto, "auto": workspace.Auto, "loop": workspace.Loop, "tmpfs": workspace.Tmpfs} {
		if got, err := workspace.ParseBackend(in); err != nil || got != want {
			t.Errorf("ParseBackend(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := workspace.ParseBackend("zfs"); err == nil {
		t.Error("ParseBackend(zfs) succeeded")
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
