package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// The file system freeze ioctls (linux/fs.h): _IOWR('X', 119, int) and
// _IOWR('X', 120, int).
const (
	ioctlFreeze = 0xC0045877
	ioctlThaw   = 0xC0045878
)

// frozen runs fn with the file system mounted at mnt frozen: writes to
// it wait, and what is on its device is consistent, until fn returns.
// A workspace that is not mounted has no writers and is not frozen:
// freezing its directory would freeze the host's file system instead.
func frozen(mnt string, fn func() error) error {
	mounted, err := isMountPoint(mnt)
	if err != nil {
		return err
	}
	if !mounted {
		return fn()
	}
	d, err := os.Open(mnt)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.IoctlSetInt(int(d.Fd()), ioctlFreeze, 0); err != nil {
		return fmt.Errorf("freeze the workspace's file system: %w", err)
	}
	defer unix.IoctlSetInt(int(d.Fd()), ioctlThaw, 0) //nolint:errcheck // nothing better to do than try
	return fn()
}

// copyChunk bounds one copy_file_range call, so that a cancelled
// context is seen between chunks.
const copyChunk = 64 << 20

// copyImage makes dst, which must not exist, a copy of the image src: a
// copy-on-write clone where the file system can, else its data extents
// only (holes stay holes), then makes it durable. On error nothing is
// left at dst.
func copyImage(ctx context.Context, src, dst string) (retErr error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); retErr == nil {
			retErr = cerr
		}
		if retErr != nil {
			_ = os.Remove(dst)
		}
	}()
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) != nil {
		if err := copyExtents(ctx, in, out, fi.Size()); err != nil {
			return fmt.Errorf("copy image: %w", err)
		}
	}
	if err := out.Truncate(fi.Size()); err != nil {
		return err
	}
	return out.Sync()
}

// copyExtents copies in's data extents to the same offsets of out.
func copyExtents(ctx context.Context, in, out *os.File, size int64) error {
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data past off
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		for data < hole {
			if err := ctx.Err(); err != nil {
				return err
			}
			roff, woff := data, data
			n, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(min(hole-data, copyChunk)), 0)
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrUnexpectedEOF
			}
			data += int64(n)
		}
		off = hole
	}
	return nil
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
