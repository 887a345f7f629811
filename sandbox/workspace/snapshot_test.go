package workspace_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// TestSnapshotClonesOnXFS: on a host file system that can clone (XFS with
// reflink), a snapshot and a workspace made from it share the source's
// blocks: taking them allocates almost nothing however much data the
// workspace holds.
func TestSnapshotClonesOnXFS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts an XFS volume: needs root")
	}
	root := xfsRoot(t)
	m, err := workspace.Open(t.Context(), workspace.Options{Root: filepath.Join(root, "ws"), Backend: workspace.Loop, UID: 1000, GID: 1000})
	if err != nil {
		t.Fatal(err)
	}
	mnt, err := m.Create(t.Context(), "src", 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("src") })
	data := make([]byte, 256<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(mnt, "data.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	free := func() int64 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(root, &st); err != nil {
			t.Fatal(err)
		}
		return int64(st.Bavail) * st.Bsize
	}
	before := free()
	if _, err := m.Snapshot(t.Context(), "src", "snap"); err != nil {
		t.Fatal(err)
	}
	copyMnt, err := m.CreateFromSnapshot(t.Context(), "copy", "snap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove("copy") })
	syscall.Sync()
	if used := before - free(); used > 32<<20 {
		t.Errorf("a snapshot of 256 MiB and a workspace made from it took %d MiB of the volume; a clone shares the blocks", used>>20)
	}
	got, err := os.ReadFile(filepath.Join(copyMnt, "data.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("data.bin in the clone: %d bytes, %v", len(got), err)
	}
}

// xfsRoot mounts a 4 GiB XFS volume with reflink on a loop device for
// the test and returns its mount point; it skips (fails under CI) where
// mkfs.xfs is missing.
func xfsRoot(t testing.TB) string {
	t.Helper()
	mkfs, err := exec.LookPath("mkfs.xfs")
	if err != nil {
		for _, p := range []string{"/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs"} {
			if _, serr := os.Stat(p); serr == nil {
				mkfs, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mkfs.xfs missing under CI: deploy/setup-host.sh installs xfsprogs")
		}
		t.Skip("mkfs.xfs missing (xfsprogs)")
	}
	dir := t.TempDir()
	img, root := filepath.Join(dir, "xfs.img"), filepath.Join(dir, "xfs")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(4 << 30)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.xfs: %v %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, root).CombinedOutput(); err != nil {
		t.Fatalf("mount the XFS volume: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", root).Run() })
	return root
}

// BenchmarkSnapshotGiB measures Snapshot of a workspace holding 1 GiB of
// data, on the test's temp dir (ext4 here: an extent copy) and on XFS
// with reflink (a clone). Its file system is frozen for the whole copy.
func BenchmarkSnapshotGiB(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, fs := range []struct {
		name string
		root func(testing.TB) string
	}{{"tempdir", func(tb testing.TB) string { return tb.(*testing.B).TempDir() }}, {"xfs-reflink", xfsRoot}} {
		b.Run(fs.name, func(b *testing.B) {
			m, err := workspace.Open(b.Context(), workspace.Options{Root: filepath.Join(fs.root(b), "ws"), Backend: workspace.Loop, UID: 1000, GID: 1000})
			if err != nil {
				b.Fatal(err)
			}
			mnt, err := m.Create(b.Context(), "src", 2<<30)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { m.Remove("src") })
			data := make([]byte, 64<<20)
			for i := range 16 {
				rand.Read(data)
				if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("f%d.bin", i)), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			syscall.Sync()
			i := 0
			for b.Loop() {
				snap := fmt.Sprintf("s%d", i)
				i++
				if _, err := m.Snapshot(b.Context(), "src", snap); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				m.DeleteSnapshot(snap)
				b.StartTimer()
			}
		})
	}
}
