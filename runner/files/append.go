package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sandgate/sandgate/runner/protocol"
)

// appendFile adds data to the end of the file p lands on, creating it
// (with mode perm, or 0644 when perm is 0) and its parents when missing.
// The path rules are Write's: a symlink at p is written through, and
// directories and special files are refused. MaxWriteBytes bounds the
// piece, which the runner holds in memory, not the file, which a caller
// builds from many pieces.
//
// Unlike Write it is not atomic, but a failed append leaves the file as it
// was (it truncates back what it wrote, or removes a file it created), so
// the caller can send the same piece again. That assumes one writer at a
// time, as a file sent in pieces has; concurrent appends to one file are
// each whole but in no promised order.
func (s *Service) appendFile(p string, data []byte, perm fs.FileMode) (protocol.WriteResult, error) {
	target, existing, err := s.writeTarget("append", p)
	if err != nil {
		return protocol.WriteResult{}, err
	}
	if existing == nil {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return protocol.WriteResult{}, s.fsError("append", p, err)
		}
	}
	f, created, err := openAppend(target)
	if err != nil {
		return protocol.WriteResult{}, s.fsError("append", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return protocol.WriteResult{}, s.fsError("append", p, err)
	}
	if !fi.Mode().IsRegular() {
		// writeTarget checked, but the path may have been replaced since.
		return protocol.WriteResult{}, protocol.Errorf(protocol.CodeInvalid,
			"append %s: is a %s, not a regular file; only regular files can be written", p, describe(fi.Mode()))
	}
	mode, err := setAppendMode(f, fi.Mode(), perm, created)
	if err == nil {
		err = writeAll(f, data)
	}
	if err != nil {
		undoAppend(f, target, fi.Size(), created)
		return protocol.WriteResult{}, s.fsError("append", p, err)
	}
	return protocol.WriteResult{Path: p, Bytes: int64(len(data)), Created: created, Mode: unixPerm(mode)}, nil
}

// openAppend opens path for appending, creating it when it does not
// exist, and reports whether it did. O_EXCL and O_NOFOLLOW make the open
// refuse a symlink put in place of the resolved path, and O_NONBLOCK a
// named pipe, which would block the open until a reader came.
func openAppend(path string) (f *os.File, created bool, err error) {
	const flags = os.O_WRONLY | os.O_APPEND | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	// 0o600 until setAppendMode sets the real mode, which the umask
	// must not change.
	f, err = os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, flags, 0)
		return f, false, err
	}
	return f, err == nil, err
}

// setAppendMode gives the file open as f its mode: perm (0o644 when 0) for
// a file just created; for an existing file, perm only when given and
// different, since changing it needs ownership the writer may lack. It
// returns the mode the file has.
func setAppendMode(f *os.File, cur, perm fs.FileMode, created bool) (fs.FileMode, error) {
	cur &= fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	if created && perm == 0 {
		perm = 0o644
	}
	if perm == 0 || perm == cur {
		return cur, nil
	}
	return perm, f.Chmod(perm)
}

// writeAll writes data to f and makes it durable.
func writeAll(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// undoAppend restores a file whose append failed: a file it created is
// removed, and an existing one cut back to its size before. Best effort:
// the append's own error is what the caller reports.
func undoAppend(f *os.File, path string, size int64, created bool) {
	if created {
		os.Remove(path)
		return
	}
	_ = f.Truncate(size)
}
