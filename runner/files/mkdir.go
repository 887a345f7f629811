package files

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Mkdir creates a directory and any missing parents, like mkdir -p. An
// existing directory is not an error; an existing file at the path is.
func (s *Service) Mkdir(ctx context.Context, req protocol.MkdirRequest) (protocol.FileInfo, error) {
	p, err := s.resolve("mkdir", req.Path)
	if err != nil {
		return protocol.FileInfo{}, err
	}
	perm, err := parseMode("mkdir", p, req.Mode, 0o755)
	if err != nil {
		return protocol.FileInfo{}, err
	}
	if ctx.Err() != nil {
		return protocol.FileInfo{}, canceled("mkdir", p)
	}
	// Stat, not Lstat: a symlink to a directory is a directory here, as it
	// is for mkdir -p.
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		return s.statInfo("mkdir", p)
	case err == nil:
		return protocol.FileInfo{}, protocol.Errorf(protocol.CodeExists,
			"mkdir %s: a %s already exists at this path; choose another name or remove it first", p, fileType(fi.Mode()))
	case !errors.Is(err, fs.ErrNotExist):
		return protocol.FileInfo{}, s.fsError("mkdir", p, err)
	}
	if err := os.MkdirAll(p, perm); err != nil {
		return protocol.FileInfo{}, s.fsError("mkdir", p, err)
	}
	if req.Mode != 0 {
		// MkdirAll applies the umask; a mode the caller asked for is
		// applied exactly, to the new leaf only.
		if err := os.Chmod(p, perm); err != nil {
			return protocol.FileInfo{}, s.fsError("mkdir", p, err)
		}
	}
	return s.statInfo("mkdir", p)
}

// statInfo returns the FileInfo of p after op changed it.
func (s *Service) statInfo(op, p string) (protocol.FileInfo, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return protocol.FileInfo{}, s.fsError(op, p, err)
	}
	return fileInfo(p, fi), nil
}
