package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/sandgate/sandgate/runner/protocol"
)

// fsError turns an error from the os package into a *protocol.Error whose
// message names op and path and says what to do next. A *protocol.Error
// passes through unchanged, so helpers may return either.
func (s *Service) fsError(op, path string, err error) error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	code, hint := s.classify(err)
	return protocol.Errorf(code, "%s %s: %s", op, path, hint)
}

// classify maps err to a Code and a hint for the user. Errno values are
// checked before the fs sentinels because ENOTEMPTY also matches
// fs.ErrExist, and the more specific message is the more useful one.
func (s *Service) classify(err error) (protocol.Code, string) {
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return protocol.CodeCanceled, "canceled before it finished"
	case errno == syscall.ENOSPC:
		return protocol.CodeNoSpace, "no space left on device; remove files you no longer need, then retry"
	case errno == syscall.EDQUOT:
		return protocol.CodeNoSpace, "disk quota exceeded; remove files you no longer need, then retry"
	case errno == syscall.EFBIG:
		return protocol.CodeTooLarge, "file too large for the sandbox's file size limit; write less data"
	case errno == syscall.EISDIR:
		return protocol.CodeIsDir, "is a directory; pass the path of a file"
	case errno == syscall.ENOTDIR:
		return protocol.CodeNotDir, "a component of the path is not a directory; check the path"
	case errno == syscall.EROFS:
		return protocol.CodePermission, fmt.Sprintf("read-only file system; write under %s instead", s.opts.Workspace)
	case errno == syscall.ELOOP:
		return protocol.CodeInvalid, "too many levels of symbolic links; check for a symlink loop"
	case errno == syscall.ENAMETOOLONG:
		return protocol.CodeInvalid, "file name too long; use a shorter name"
	case errno == syscall.ENOTEMPTY:
		return protocol.CodeExists, "directory is not empty"
	case errno == syscall.EXDEV:
		return protocol.CodeUnsupported, "source and destination are on different file systems"
	case errors.Is(err, fs.ErrNotExist):
		return protocol.CodeNotFound, fmt.Sprintf(
			"no such file or directory; check the path (relative paths resolve against %s)", s.opts.Workspace)
	case errors.Is(err, fs.ErrPermission):
		return protocol.CodePermission, fmt.Sprintf(
			"permission denied; the sandbox user (uid %d) may not do this here", os.Getuid())
	case errors.Is(err, fs.ErrExist):
		return protocol.CodeExists, "already exists"
	}
	return protocol.CodeInternal, innermost(err).Error()
}

// innermost strips *fs.PathError and similar wrappers whose text repeats
// the op and path that fsError already puts in front.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// canceled is the error of an operation whose ctx ended before it began
// or while it ran.
func canceled(op, path string) error {
	return protocol.Errorf(protocol.CodeCanceled, "%s %s: canceled before it finished", op, path)
}

// tooLarge says that what has n bytes is above the named cap, with a hint.
func tooLarge(op, path, what string, n, limit int64, capName, hint string) error {
	size, capSize := formatSize(n), formatSize(limit)
	if size == capSize {
		// "10 MiB, above the 10 MiB cap" would read as a contradiction.
		size, capSize = fmt.Sprintf("%d bytes", n), fmt.Sprintf("%d bytes", limit)
	}
	return protocol.Errorf(protocol.CodeTooLarge, "%s %s: %s is %s, above the %s %s cap; %s",
		op, path, what, size, capSize, capName, hint)
}

// formatSize renders n bytes for a person: whole units where exact, else
// one decimal, e.g. "52 MiB", "1.5 KiB", "300 bytes".
func formatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v < unit {
			break
		}
		v, suffix = v/unit, s
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), suffix)
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
