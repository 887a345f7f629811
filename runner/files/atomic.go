package files

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxTempBase bounds the part of a file name copied into its temporary
// name, so a name near the 255-byte limit still leaves room for the prefix
// and the random suffix.
const maxTempBase = 100

// replaceFile replaces path with data and mode perm, atomically when it
// can. When path exists but cannot be replaced by a rename — its directory
// is not writable, or it is a mount point like /etc/hosts in a container
// (EBUSY) — it is rewritten in place instead: not atomic, but the only
// write the file allows.
func replaceFile(path string, data []byte, perm fs.FileMode, exists bool) error {
	err := writeAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if exists && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV)) {
		return writeInPlace(path, data, perm)
	}
	return err
}

// writeInPlace truncates path and writes data into it, changing its mode
// only when it differs, since that needs ownership the writer may lack.
func writeInPlace(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != perm {
		if err := f.Chmod(perm); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// copyFile atomically replaces to with a copy of the regular file from,
// streaming, since the file may be large.
func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomic(to, perm, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// writeAtomic replaces path with what fill writes, atomically: fill writes
// a temporary file in the same directory (rename is atomic only within
// one file system), which is fsynced, given mode perm and renamed over
// path. On any error the temporary file is removed, so a full disk leaves
// the old content and no debris. Renaming breaks hard links to the old
// file and makes the runner's user its owner; both are the price of
// atomicity.
func writeAtomic(path string, perm fs.FileMode, fill func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if len(base) > maxTempBase {
		base = base[:maxTempBase]
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.sandgate-tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close() // may already be closed; that error is moot
			os.Remove(tmp.Name())
		}
	}()
	if err = fill(tmp); err != nil {
		return err
	}
	// Chmod on the descriptor rather than a create mode: the umask must
	// not change the mode the caller asked for or the file had.
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable. It is best effort: the rename has
// already happened, and some file systems refuse to fsync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
