package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/sandbox"
)

// A snapshot with memory is a pause checkpoint (checkpoint.go) copied
// beside the snapshot's workspace image, taken while the sandbox is
// stopped for it, so that the files and the memory are of one instant.
// A sandbox made from the snapshot gets the checkpoint copied into its
// new container's checkpoint dir in the engine, where a restore reads
// it (the engine restores from nowhere else), and starts from it: its
// processes, /tmp, interpreter and browser are the snapshot's, on a
// copy of the snapshot's workspace at the same path. gVisor restores a
// checkpoint into a container other than the one it came from as long
// as the mounts are at the same places, which they are: each sandbox's
// socket dir, workspace and runner are bind-mounted at fixed paths.

// snapshotMemory is the checkpoint's name inside a snapshot's directory.
const snapshotMemory = "memory"

var _ sandbox.MemorySnapshotter = (*Provider)(nil)

// SnapshotWithMemory is Snapshot with the sandbox's memory: see
// sandbox.MemorySnapshotter. The sandbox is paused with its memory, its
// workspace copied, the checkpoint copied, and the sandbox restored.
func (p *Provider) SnapshotWithMemory(ctx context.Context, id, snap string) (int64, error) {
	start := time.Now()
	if ok, why := p.KeepsMemory(); !ok {
		return 0, fmt.Errorf("snapshot sandbox %s with its memory: %w: %s", id, sandbox.ErrCannotKeepMemory, why)
	}
	cs, err := p.findOne(ctx, id, "snapshot")
	if err != nil {
		return 0, err
	}
	c := cs[0]
	dst := p.ws.SnapshotExtra(snap, snapshotMemory)
	switch {
	case c.State != container.StateRunning:
		return 0, fmt.Errorf("snapshot sandbox %s with its memory: %w: it is not running (%s)", id, sandbox.ErrCannotKeepMemory, c.State)
	case dst == "":
		return 0, fmt.Errorf("snapshot sandbox %s: snapshot id %q is not an id", id, snap)
	}
	if err := p.PauseKeepingMemory(ctx, id, "snapshot"); err != nil {
		return 0, err // it runs on
	}
	// It runs again whatever becomes of the copies.
	defer func() {
		if _, err := p.Resume(context.WithoutCancel(ctx), id); err != nil {
			p.log.Error("resume a sandbox after its memory snapshot; it stays paused with its memory and its next call resumes it",
				"sandbox_id", id, "error", err)
		}
	}()
	n, err := p.ws.Snapshot(ctx, id, snap)
	if err != nil {
		return 0, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	if err := copyTree(p.checkpointPath(c.ID), dst); err != nil {
		_ = p.ws.DeleteSnapshot(snap)
		return 0, fmt.Errorf("snapshot sandbox %s: copy its memory: %w", id, err)
	}
	memory := dirBytes(dst)
	p.log.Info("sandbox snapshot taken with its memory", "sandbox_id", id, "snapshot", snap, "bytes", n, "memory_bytes", memory,
		"duration_ms", time.Since(start).Milliseconds())
	return n + memory, nil
}

// snapshotCheckpoint is snapshot snap's memory checkpoint, or "" when it
// has none or this provider cannot restore one.
func (p *Provider) snapshotCheckpoint(snap string) string {
	if ok, _ := p.KeepsMemory(); !ok {
		return ""
	}
	dir := p.ws.SnapshotExtra(snap, snapshotMemory)
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// startFromSnapshot starts a new sandbox's container from snapshot
// memory checkpoint, copied into the container's checkpoint dir, and
// reports whether it was restored; where it cannot be, the container
// starts afresh on the snapshot's files. The copy is removed once the
// container runs.
func (p *Provider) startFromSnapshot(ctx context.Context, id, containerID, socketDir, checkpoint string) (bool, error) {
	restoring := true
	if err := copyTree(checkpoint, p.checkpointPath(containerID)); err != nil {
		p.log.Warn("copy a snapshot's memory for a new sandbox; it starts afresh on the snapshot's files", "sandbox_id", id, "error", err)
		restoring = false
	} else if err := staleSocket(filepath.Join(socketDir, SocketName)); err != nil {
		p.log.Warn("make the runner socket a snapshot's memory expects; the new sandbox starts afresh on the snapshot's files", "sandbox_id", id, "error", err)
		restoring = false
	}
	restored, err := p.restoreOrStart(ctx, id, containerID, socketDir, restoring)
	if err != nil {
		return false, err
	}
	if err := p.dropCheckpoint(ctx, containerID); err != nil {
		return false, err
	}
	return restored, nil
}

// staleSocket makes path a unix socket that nothing listens on. gVisor
// checks on restore that every file the checkpointed sandbox had looked
// up still exists, with its type; the runner's socket is one, and a new
// sandbox's socket dir has none until its restored runner binds again
// (which replaces it).
func staleSocket(path string) error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false)
	return ln.Close()
}

// copyTree copies directory src to dst, which must not exist: its
// directories, and its regular files with their modes (copy_file_range,
// so a clone where the file system can). Anything else is an error. A
// failed copy leaves nothing at dst.
func copyTree(src, dst string) (err error) {
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copy %s: %s exists already", src, dst)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dst)
		}
	}()
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path) // under src by construction
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			return copyFile(path, to, fi.Mode().Perm())
		}
		return fmt.Errorf("copy %s: %s is neither a file nor a directory", src, path)
	})
}

// copyFile copies regular file src to a new file dst of mode perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
