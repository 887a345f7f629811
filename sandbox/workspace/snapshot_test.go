package workspace_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/sandbox/workspace"
)

// TestSnapshotAndCreateFrom: a snapshot holds the workspace's files as
// they were when it was taken, later writes to the workspace do not
// reach it, a workspace made from it starts with those files and is
// independent of it and of the original, and it costs about its data on
// disk, not the workspace's size.
func TestSnapshotAndCreateFrom(t *testing.T) {
	m := openLoop(t)
	mnt, err := m.Create(t.Context(), "orig", 4<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("orig") })
	data := make([]byte, 8<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(mnt, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := m.Snapshot(t.Context(), "orig", "snap1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.DeleteSnapshot("snap1") })
	if n < int64(len(data)) || n > 128<<20 {
		t.Errorf("snapshot of 8 MiB of files in a 4 GiB workspace takes %d bytes; want about the data, never the size", n)
	}
	if err := os.WriteFile(filepath.Join(mnt, "after.txt"), []byte("later"), 0o644); err != nil {
		t.Fatal(err)
	}

	copyMnt, err := m.CreateFromSnapshot(t.Context(), "copy", "snap1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("copy") })
	got, err := os.ReadFile(filepath.Join(copyMnt, "data.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("data.bin in the workspace made from the snapshot: %d bytes, %v; want the 8 MiB written before it", len(got), err)
	}
	if _, err := os.Stat(filepath.Join(copyMnt, "after.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file written after the snapshot is in the copy: %v", err)
	}
	if err := os.WriteFile(filepath.Join(copyMnt, "copy.txt"), []byte("copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "copy.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write to the copy reached the original: %v", err)
	}
	again, err := m.CreateFromSnapshot(t.Context(), "copy2", "snap1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("copy2") })
	if _, err := os.Stat(filepath.Join(again, "copy.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write to one copy reached the snapshot: %v", err)
	}

	if _, err := m.Snapshot(t.Context(), "orig", "snap1"); err == nil {
		t.Error("a second snapshot under the same id succeeded")
	}
	for _, bad := range []string{"../x", "a/b", "", "_snapshots"} {
		if _, err := m.Snapshot(t.Context(), "orig", bad); err == nil {
			t.Errorf("snapshot named %q succeeded", bad)
		}
	}
	if err := m.DeleteSnapshot("snap1"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteSnapshot("snap1"); !errors.Is(err, workspace.ErrNoSnapshot) {
		t.Errorf("second delete: %v, want ErrNoSnapshot", err)
	}
	if _, err := m.CreateFromSnapshot(t.Context(), "copy3", "snap1"); !errors.Is(err, workspace.ErrNoSnapshot) {
		t.Errorf("create from a deleted snapshot: %v, want ErrNoSnapshot", err)
	}
}

// TestSnapshotDiskFull: a snapshot that runs out of disk on the host
// fails with ENOSPC and leaves nothing behind, and the workspace is
// thawed: its writers carry on at once.
func TestSnapshotDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a small tmpfs as the workspace root: needs root")
	}
	root := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	// 48 MiB of host disk: room for a workspace's 30 MiB of data once,
	// not twice.
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=48m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	m, err := workspace.Open(t.Context(), workspace.Options{Root: filepath.Join(root, "ws"), Backend: workspace.Loop, UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	mnt, err := m.Create(t.Context(), "full", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("full") })
	data := make([]byte, 30<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(mnt, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	if _, err := m.Snapshot(t.Context(), "full", "snap"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("snapshot with too little disk: %v, want ENOSPC", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "ws", "_snapshots")); len(ents) != 0 {
		t.Errorf("a failed snapshot left %v", ents)
	}
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(filepath.Join(mnt, "after.txt"), []byte("thawed"), 0o644) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write to the workspace after the failed snapshot: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a write to the workspace still waits a minute after the failed snapshot: left frozen")
	}
}
