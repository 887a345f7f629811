package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	loopControl = "/dev/loop-control"
	loopMajor   = 7
	// mkfsTimeout bounds formatting; a sparse 4 GiB image takes ~65 ms.
	mkfsTimeout = 30 * time.Second
	// probeBytes is the size of the image Open formats to check that loop
	// mounts work here.
	probeBytes = 32 << 20
	// mountOptions: discard hands deleted blocks back to the sparse host
	// file; noinit_itable stops the kernel from zeroing inode tables in
	// the background, which would allocate host disk for an empty
	// workspace (mkfs leaves them uninitialised and flagged so).
	mountOptions = "discard,noinit_itable"
	mountFlags   = unix.MS_NOSUID | unix.MS_NODEV
)

// mkfsPaths are tried in order: a gateway user's PATH often lacks sbin.
// mke2fs -t ext4 is what mkfs.ext4 runs.
var mkfsPaths = []string{"mke2fs", "/usr/sbin/mke2fs", "/sbin/mke2fs"}

// makeImage creates a sparse file of size bytes at path and formats it as
// ext4 whose root directory belongs to uid:gid.
func makeImage(ctx context.Context, path string, size int64, uid, gid int) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("size image to %d bytes: %w", size, err)
	}
	mkfs, err := findMkfs()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, mkfsTimeout)
	defer cancel()
	// -m 0: no blocks reserved for root, the sandbox user gets the whole
	// size. Lazy init and nodiscard keep formatting from writing (or
	// trimming) the whole image: the file stays sparse.
	cmd := exec.CommandContext(ctx, mkfs, "-q", "-F", "-t", "ext4", "-m", "0", "-b", "4096",
		"-E", fmt.Sprintf("root_owner=%d:%d,lazy_itable_init=1,lazy_journal_init=1,nodiscard", uid, gid),
		path)
	cmd.Env = []string{"LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("format image with %s: %w: %s", mkfs, err, bytes.TrimSpace(out))
	}
	return nil
}

func findMkfs() (string, error) {
	for _, p := range mkfsPaths {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", errors.New("mke2fs not found (install e2fsprogs)")
}

// mountImage attaches img to a free loop device and mounts it at mnt.
// The device has autoclear set, so unmounting also frees it.
func mountImage(img, mnt string) error {
	dev, err := attachLoop(img)
	if err != nil {
		return err
	}
	if err := unix.Mount(dev.Name(), mnt, "ext4", mountFlags, mountOptions); err != nil {
		_ = unix.IoctlSetInt(int(dev.Fd()), unix.LOOP_CLR_FD, 0)
		dev.Close()
		return fmt.Errorf("mount %s on %s: %w", dev.Name(), mnt, err)
	}
	// The mount now holds the device; closing our handle lets autoclear
	// detach it at unmount.
	return dev.Close()
}

// attachLoop binds img to a free loop device and returns the open device.
func attachLoop(img string) (*os.File, error) {
	ctl, err := os.OpenFile(loopControl, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loopControl, err)
	}
	defer ctl.Close()
	backing, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open image: %w", err)
	}
	defer backing.Close() // the loop device keeps its own reference
	// Another process may take the free device between GET_FREE and
	// CONFIGURE; the kernel then says EBUSY and we ask again.
	for range 20 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("find a free loop device: %w", err)
		}
		dev, err := openLoop(n)
		if err != nil {
			return nil, err
		}
		cfg := unix.LoopConfig{Fd: uint32(backing.Fd()), Size: 4096}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], filepath.Base(img))
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("configure loop device %d: %w", n, err)
		}
	}
	return nil, errors.New("configure a loop device: every free one was taken by someone else; try again")
}

// openLoop opens /dev/loopN, making the node if it is missing: in a
// container /dev is populated once at start, so devices the kernel adds
// later have no node there.
func openLoop(n int) (*os.File, error) {
	path := fmt.Sprintf("/dev/loop%d", n)
	dev, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		if err := unix.Mknod(path, unix.S_IFBLK|0o600, int(unix.Mkdev(loopMajor, uint32(n)))); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("make device node %s: %w", path, err)
		}
		dev, err = os.OpenFile(path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return dev, nil
}

// unmount unmounts mnt, lazily if something still holds it (the kernel
// then finishes when the last user goes, and autoclear frees the device).
func unmount(mnt string) error {
	err := unix.Unmount(mnt, unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(mnt, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: not mounted
		return fmt.Errorf("unmount %s: %w", mnt, err)
	}
	return nil
}

// isMountPoint reports whether path is mounted on, by comparing its device
// with its parent's. A missing path is not a mount point.
func isMountPoint(path string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := unix.Lstat(filepath.Dir(path), &parent); err != nil {
		return false, fmt.Errorf("stat %s: %w", filepath.Dir(path), err)
	}
	return st.Dev != parent.Dev, nil
}

// probe checks that this host can make, mount and unmount a workspace by
// doing it once in a scratch directory under root.
func probe(ctx context.Context, root string) error {
	if os.Geteuid() != 0 {
		return errors.New("loop mounts need root (CAP_SYS_ADMIN); the gateway runs as uid " + fmt.Sprint(os.Geteuid()))
	}
	if _, err := os.Stat(loopControl); err != nil {
		return fmt.Errorf("no loop device support: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(root, ".probe-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("make probe dir: %w", err)
	}
	img, mnt := filepath.Join(dir, imageName), filepath.Join(dir, mountName)
	defer os.RemoveAll(dir)
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return fmt.Errorf("make probe mount point: %w", err)
	}
	if err := makeImage(ctx, img, probeBytes, os.Getuid(), os.Getgid()); err != nil {
		return err
	}
	if err := mountImage(img, mnt); err != nil {
		return err
	}
	werr := os.WriteFile(filepath.Join(mnt, "probe"), []byte("ok"), 0o600)
	if err := unmount(mnt); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("write to a mounted workspace: %w", werr)
	}
	return nil
}

// allocated is the bytes of disk fi's file has allocated (st_blocks
// counts 512-byte units whatever the file system's block size).
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return 0
}
