package files

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Stat describes the entry at req.Path without following a final
// symlink; for a link, Target holds the link text.
func (s *Service) Stat(ctx context.Context, req protocol.PathRequest) (protocol.FileInfo, error) {
	p, err := s.resolve("stat", req.Path)
	if err != nil {
		return protocol.FileInfo{}, err
	}
	if ctx.Err() != nil {
		return protocol.FileInfo{}, canceled("stat", p)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return protocol.FileInfo{}, s.fsError("stat", p, err)
	}
	return fileInfo(p, fi), nil
}

// fileInfo converts fi, the Lstat of the clean absolute path p.
func fileInfo(p string, fi fs.FileInfo) protocol.FileInfo {
	info := protocol.FileInfo{
		Path:    p,
		Name:    filepath.Base(p),
		Type:    fileType(fi.Mode()),
		Size:    fi.Size(),
		Mode:    modeString(fi.Mode()),
		Perm:    unixPerm(fi.Mode()),
		ModTime: fi.ModTime().UTC(),
	}
	if info.Type == protocol.TypeSymlink {
		// A link that cannot be read (it vanished) still lists; the
		// missing target says as much.
		info.Target, _ = os.Readlink(p)
	}
	return info
}

// fileType names the kind of entry m describes.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return protocol.TypeFile
	case m.IsDir():
		return protocol.TypeDir
	case m&fs.ModeSymlink != 0:
		return protocol.TypeSymlink
	}
	return protocol.TypeOther
}

// describe names a non-regular entry for error messages, e.g. "named
// pipe", so the user learns why it cannot be read.
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}
