package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sandgate/sandgate/runner/protocol"
)

// maxLinkHops bounds followLinks like the kernel's own limit (40 on
// Linux), so a symlink loop ends in an error instead of a hang.
const maxLinkHops = 40

// resolve turns a request path into a cleaned absolute path. Absolute
// paths are taken as they are: the container, not this package, decides
// what the sandbox user may touch. op names the operation for the error.
func (s *Service) resolve(op, p string) (string, error) {
	if p == "" {
		return "", protocol.Errorf(protocol.CodeInvalid,
			"%s: path is empty; pass an absolute path or one relative to the workspace %s", op, s.opts.Workspace)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", protocol.Errorf(protocol.CodeInvalid,
			"%s %q: path contains a NUL byte, which no file name may hold; remove it", op, p)
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	return filepath.Join(s.opts.Workspace, p), nil
}

// followLinks returns the path a write to p lands on: p itself when it is
// not a symlink or does not exist, else the end of its chain of links.
// Unlike filepath.EvalSymlinks it also follows a dangling link, so writing
// through a link to a file not yet created creates that file and keeps the
// link. Only the last component is followed; the kernel resolves the rest.
func followLinks(p string) (string, error) {
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			// A relative target is relative to the link's real directory;
			// joining it to a lexical parent would mis-handle ".." when the
			// parent is itself reached through a symlink.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", err
			}
			target = filepath.Join(dir, target)
		}
		p = filepath.Clean(target)
	}
	return "", &fs.PathError{Op: "readlink", Path: p, Err: syscall.ELOOP}
}

// isWithin reports whether p is dir or lies below it. Both must be clean
// and absolute.
func isWithin(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}

// isProtected reports whether removing or moving p would take the
// workspace with it: "/", the workspace root, or any parent of it. An
// agent that asks for that almost certainly made a path mistake.
func (s *Service) isProtected(p string) bool {
	return p == "/" || isWithin(s.opts.Workspace, p)
}
