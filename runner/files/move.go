package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Move renames req.From to req.To, creating the destination's parent
// directories, and returns the FileInfo of the destination. An existing
// destination is replaced only with Overwrite, and only by an entry of the
// same kind (file over file, directory over empty directory), as rename(2)
// allows. Across file systems only files and symlinks can be moved.
//
// The existence check and the rename are two steps, so a destination
// created in between by another process is replaced; within one sandbox
// that race is the agent's own.
func (s *Service) Move(ctx context.Context, req protocol.MoveRequest) (protocol.FileInfo, error) {
	from, err := s.resolve("move", req.From)
	if err != nil {
		return protocol.FileInfo{}, err
	}
	to, err := s.resolve("move", req.To)
	if err != nil {
		return protocol.FileInfo{}, err
	}
	what := from + " to " + to
	if s.isProtected(from) {
		return protocol.FileInfo{}, protocol.Errorf(protocol.CodeInvalid,
			"move %s: refusing to move the root or the workspace %s itself; move the entries inside it instead",
			what, s.opts.Workspace)
	}
	if ctx.Err() != nil {
		return protocol.FileInfo{}, canceled("move", what)
	}
	src, err := os.Lstat(from)
	if err != nil {
		return protocol.FileInfo{}, s.fsError("move", from, err)
	}
	if from == to {
		return fileInfo(to, src), nil
	}
	if err := s.checkMoveTarget(what, from, to, src, req.Overwrite); err != nil {
		return protocol.FileInfo{}, err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return protocol.FileInfo{}, s.fsError("move", what, err)
	}
	// syscall.Rename, not os.Rename: os.Rename refuses any existing
	// directory as the destination, while rename(2) atomically replaces
	// an empty one, which is what Overwrite promises.
	err = syscall.Rename(from, to)
	if errors.Is(err, syscall.EXDEV) {
		err = s.moveAcross(what, from, to, src)
	}
	if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return protocol.FileInfo{}, protocol.Errorf(protocol.CodeExists,
			"move %s: %s is a directory that is not empty; remove it first or choose another destination", what, to)
	}
	if err != nil {
		return protocol.FileInfo{}, s.fsError("move", what, err)
	}
	return s.statInfo("move", to)
}

// checkMoveTarget refuses destinations rename(2) would reject, with
// messages that say what to do instead of a bare EISDIR or EINVAL.
func (s *Service) checkMoveTarget(what, from, to string, src fs.FileInfo, overwrite bool) error {
	if src.IsDir() && isWithin(to, from) {
		return protocol.Errorf(protocol.CodeInvalid,
			"move %s: cannot move a directory into itself; choose a destination outside %s", what, from)
	}
	dst, err := os.Lstat(to)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return s.fsError("move", to, err)
	}
	switch {
	case !overwrite:
		return protocol.Errorf(protocol.CodeExists,
			"move %s: %s already exists; pass overwrite to replace it, or choose another destination", what, to)
	case dst.IsDir() && !src.IsDir():
		return protocol.Errorf(protocol.CodeIsDir,
			"move %s: %s is a directory; to move into it, pass %s as the destination",
			what, to, filepath.Join(to, filepath.Base(from)))
	case !dst.IsDir() && src.IsDir():
		return protocol.Errorf(protocol.CodeNotDir,
			"move %s: cannot replace the file %s with a directory; remove it first or choose another destination", what, to)
	}
	return nil
}

// moveAcross moves a file or symlink to another file system: copy to the
// destination atomically, then remove the source. Directories are
// refused; copying a tree here would be a second, worse cp -a.
func (s *Service) moveAcross(what, from, to string, src fs.FileInfo) error {
	switch {
	case src.Mode().IsRegular():
		if err := copyFile(from, to, permMode(unixPerm(src.Mode()))); err != nil {
			return err
		}
	case src.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Symlink(target, to); err != nil {
			return err
		}
	default:
		return protocol.Errorf(protocol.CodeUnsupported,
			"move %s: source and destination are on different file systems, and only files and symlinks move across; copy the %s with a shell command (cp -a) and remove the original",
			what, fileType(src.Mode()))
	}
	return os.Remove(from)
}
