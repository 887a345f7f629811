package process

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

const maxSymlinks = 40 // as the kernel's path walk

// workdir returns the directory a request runs in: cwd (relative to the
// workspace when not absolute, the workspace when empty) with every
// symlink resolved.
//
// A directory under /proc is refused: /proc/self/fd/N and /proc/<pid>/cwd
// are magic links to whatever a process holds open, and a child chdirs
// before exec with the runner's file table (the CVE-2024-21626 class of
// escape). The walk resolves symlinks one component at a time and checks
// every path it reaches, so a symlink in the workspace that points into
// /proc is refused too, before anything under /proc is looked at.
func (m *Manager) workdir(cwd string) (string, error) {
	p := cwd
	if p == "" {
		p = m.opts.Workspace
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(m.opts.Workspace, p)
	}
	dir, err := resolve(filepath.Clean(p))
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		return "", err
	case errors.Is(err, fs.ErrNotExist):
		return "", protocol.Errorf(protocol.CodeNotFound, "working directory %s does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return "", protocol.Errorf(protocol.CodePermission, "working directory %s: permission denied", p)
	case err != nil:
		return "", protocol.Errorf(protocol.CodeInvalid, "working directory %s: %v", p, err)
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", protocol.Errorf(protocol.CodeNotFound, "working directory %s does not exist", p)
	case !fi.IsDir():
		return "", protocol.Errorf(protocol.CodeNotDir, "working directory %s is not a directory", p)
	case unix.Access(dir, unix.X_OK) != nil:
		return "", protocol.Errorf(protocol.CodePermission, "working directory %s: permission denied", p)
	}
	return dir, nil
}

// resolve returns the absolute, clean path p with all symlinks resolved,
// refusing any path under /proc met on the way.
func resolve(p string) (string, error) {
	done := "/"
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		if underProc(next) {
			return "", protocol.Errorf(protocol.CodeInvalid,
				"working directory %s is under /proc, which is not allowed; use a directory in the workspace", p)
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", unix.ELOOP
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done, nil
}

// underProc reports whether the clean absolute path p is /proc or below.
func underProc(p string) bool {
	return p == "/proc" || strings.HasPrefix(p, "/proc/")
}
