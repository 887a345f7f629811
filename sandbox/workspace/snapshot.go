package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Snapshots are immutable copies of a workspace's image, kept under
// Root/_snapshots/ID/ (the underscore keeps them apart from workspace
// ids, which cannot start with one). A snapshot is taken with the
// workspace's file system frozen, so it is consistent as of one instant,
// and copied without the image's holes: by a copy-on-write clone where
// the host's file system can (btrfs, XFS: milliseconds, whatever the
// size), else extent by extent. A new workspace made from one is copied
// the same way, so snapshots stay immutable.

// snapshotDirName holds the snapshots under Root.
const snapshotDirName = "_snapshots"

// ErrNoSnapshot is a snapshot that does not exist.
var ErrNoSnapshot = errors.New("no such snapshot")

// snapshotDir is the directory of snapshot snap.
func (m *Manager) snapshotDir(snap string) string {
	return filepath.Join(m.opts.Root, snapshotDirName, snap)
}

// SnapshotExtra is the path of name inside snapshot snap's directory,
// where a provider keeps what belongs with the snapshot's files (a
// memory checkpoint); DeleteSnapshot removes it with them. "" for ids
// that are not ids.
func (m *Manager) SnapshotExtra(snap, name string) string {
	if !idPattern.MatchString(snap) || name == imageName {
		return ""
	}
	return filepath.Join(m.snapshotDir(snap), name)
}

// Snapshot copies sandbox id's workspace, as it is at one instant, to a
// new snapshot snap and returns the bytes it takes on disk. Writers in
// the sandbox wait while its file system is frozen, which lasts the copy
// (a clone where the host can). On any failure (a full disk among them)
// nothing of the snapshot is left and the workspace is thawed.
func (m *Manager) Snapshot(ctx context.Context, id, snap string) (int64, error) {
	if m.backend != Loop {
		return 0, errors.New("snapshot workspace: the tmpfs backend keeps nothing on the host to copy")
	}
	if !idPattern.MatchString(id) || !idPattern.MatchString(snap) {
		return 0, fmt.Errorf("snapshot workspace %q as %q: ids must match %s", id, snap, idPattern)
	}
	defer m.lock(id)()
	dir := m.Dir(id)
	img, mnt := filepath.Join(dir, imageName), filepath.Join(dir, mountName)
	if _, err := os.Lstat(img); err != nil {
		return 0, fmt.Errorf("snapshot workspace %s: %w", id, err)
	}
	dst := m.snapshotDir(snap)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, fmt.Errorf("snapshot workspace %s: %w", id, err)
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return 0, fmt.Errorf("snapshot workspace %s as %s: %w", id, snap, err)
	}
	err := frozen(mnt, func() error { return copyImage(ctx, img, filepath.Join(dst, imageName)) })
	if err == nil {
		err = syncDir(dst)
	}
	if err != nil {
		_ = os.RemoveAll(dst)
		return 0, fmt.Errorf("snapshot workspace %s: %w", id, err)
	}
	return m.SnapshotBytes(snap), nil
}

// SnapshotBytes is what snapshot snap takes on disk (0: none).
func (m *Manager) SnapshotBytes(snap string) int64 {
	if !idPattern.MatchString(snap) {
		return 0
	}
	fi, err := os.Lstat(filepath.Join(m.snapshotDir(snap), imageName))
	if err != nil {
		return 0
	}
	return allocated(fi)
}

// DeleteSnapshot removes snapshot snap; a missing one is ErrNoSnapshot.
func (m *Manager) DeleteSnapshot(snap string) error {
	if !idPattern.MatchString(snap) {
		return fmt.Errorf("delete snapshot %q: %w", snap, ErrNoSnapshot)
	}
	dst := m.snapshotDir(snap)
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete snapshot %s: %w", snap, ErrNoSnapshot)
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", snap, err)
	}
	return nil
}

// CreateFromSnapshot is Create of a workspace holding snapshot snap's
// files (and of its size) instead of an empty one.
func (m *Manager) CreateFromSnapshot(ctx context.Context, id, snap string) (string, error) {
	if m.backend == Loop && !idPattern.MatchString(snap) {
		return "", fmt.Errorf("create workspace %s from snapshot %q: %w", id, snap, ErrNoSnapshot)
	}
	src := filepath.Join(m.snapshotDir(snap), imageName)
	if _, err := os.Lstat(src); m.backend == Loop && err != nil {
		return "", fmt.Errorf("create workspace %s from snapshot %s: %w", id, snap, ErrNoSnapshot)
	}
	return m.create(id, func(img string) error { return copyImage(ctx, src, img) })
}
