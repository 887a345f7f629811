package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Remove deletes a file, a symlink (not its target) or an empty
// directory; with Recursive, a whole tree. It refuses "/", the workspace
// and the workspace's parents, which no sensible request removes.
func (s *Service) Remove(ctx context.Context, req protocol.RemoveRequest) (protocol.RemoveResult, error) {
	p, err := s.resolve("remove", req.Path)
	if err != nil {
		return protocol.RemoveResult{}, err
	}
	if s.isProtected(p) {
		return protocol.RemoveResult{}, protocol.Errorf(protocol.CodeInvalid,
			"remove %s: refusing to remove the root or the workspace %s itself; remove the entries inside it instead",
			p, s.opts.Workspace)
	}
	if ctx.Err() != nil {
		return protocol.RemoveResult{}, canceled("remove", p)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return protocol.RemoveResult{}, s.fsError("remove", p, err)
	}
	if !fi.IsDir() || !req.Recursive {
		return s.removeOne(p, fi)
	}
	total := countTree(p)
	if err := os.RemoveAll(p); err != nil {
		err = s.fsError("remove", p, err)
		var perr *protocol.Error
		if errors.As(err, &perr) {
			perr.Message += fmt.Sprintf("; removed %d of %d entries before the error, the rest is still there",
				total-countTree(p), total)
		}
		return protocol.RemoveResult{}, err
	}
	return protocol.RemoveResult{Path: p, Removed: total}, nil
}

// removeOne removes a file, link or empty directory.
func (s *Service) removeOne(p string, fi fs.FileInfo) (protocol.RemoveResult, error) {
	err := os.Remove(p)
	if fi.IsDir() && (errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)) {
		return protocol.RemoveResult{}, protocol.Errorf(protocol.CodeInvalid,
			"remove %s: directory is not empty; pass recursive to remove it and everything in it", p)
	}
	if err != nil {
		return protocol.RemoveResult{}, s.fsError("remove", p, err)
	}
	return protocol.RemoveResult{Path: p, Removed: 1}, nil
}

// countTree counts p and the entries below it without following symlinks;
// 0 when p is gone. Unreadable parts are not counted.
func countTree(p string) int {
	n := 0
	filepath.WalkDir(p, func(_ string, _ fs.DirEntry, err error) error {
		if err == nil {
			n++
		}
		return nil
	})
	return n
}
