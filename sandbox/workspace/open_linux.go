package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// beneath is how OpenAsUser resolves a name: below the workspace root
// only, never through a symlink of any kind and never onto another
// mount. Whatever these refuse is a path the host's view of the
// workspace could resolve differently from the sandbox's (an absolute
// symlink means the sandbox's root, not the host's), so the caller asks
// the runner instead.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// OpenAsUser opens name, a path relative to the root of sandbox id's
// workspace, read-only, with the kernel checking permissions as the
// sandbox user (Options.UID and GID) would meet them. It is for a caller
// on the host that reads a sandbox's files without asking its runner.
// It fails, and the caller should then ask the runner, for everything
// the host's view could get wrong: a name through any symlink or above
// the root, another mount, a workspace not on this host's disk, and a
// process that is not root (it could not take the sandbox user's ids).
func (m *Manager) OpenAsUser(id, name string) (*os.File, error) {
	if m.backend != Loop || !runAsRoot || !idPattern.MatchString(id) {
		return nil, errors.ErrUnsupported
	}
	// The sandbox's directory is root's (0700): its mount point is
	// opened as root, by a path of the gateway's own making.
	mnt := filepath.Join(id, mountName)
	dir, err := unix.Openat(int(m.root.Fd()), mnt, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	runtime.KeepAlive(m.root)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: m.MountPath(id), Err: err}
	}
	defer unix.Close(dir)
	return openBeneathAs(dir, name, m.opts.UID, m.opts.GID)
}

// openBeneathAs opens name below the directory dir as OpenAsUser says.
// O_NONBLOCK keeps a named pipe from blocking the open; the caller checks
// the file's type before it reads. The mount is nodev, so no open reaches
// a device.
func openBeneathAs(dir int, name string, uid, gid int) (*os.File, error) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC, Resolve: beneath}
	fd := -1
	err := asUser(uid, gid, func() (err error) {
		fd, err = unix.Openat2(dir, name, &how)
		return err
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	// Blocking again, so that os.NewFile does not try (and fail) to add a
	// regular file to the network poller: two system calls fewer.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// The process's ids, read once: a gateway never changes them.
var (
	runAsRoot = os.Geteuid() == 0
	rootGID   = os.Getegid()
)

// asUser runs fn with this OS thread's file system ids set to uid:gid,
// and then back to root's. The file system ids are the ones the kernel
// checks file permissions against, and setting fsuid away from 0 also
// drops the thread's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so fn
// meets exactly the sandbox user's permissions, ACLs included. They are
// per thread: the raw setfsuid(2) changes only the caller's (unlike
// syscall.Setuid, which Go applies to every thread), the goroutine is
// locked to its thread meanwhile, and Go never clones a new thread from a
// locked one. setfsuid(2) reports no failure, so the ids are read back
// both ways: fn runs only as uid:gid (a root without CAP_SETUID would
// run it as root), and should root's ids not come back, the thread stays
// locked, so that it ends with this goroutine and nothing else ever runs
// on it.
func asUser(uid, gid int, fn func() error) error {
	runtime.LockOSThread()
	unix.Setfsgid(gid)
	unix.Setfsuid(uid)
	err := errors.New("this process cannot take the sandbox user's file system ids (no CAP_SETUID or CAP_SETGID)")
	if fsuid, fsgid := fsIDs(); fsuid == uid && fsgid == gid {
		err = fn()
	}
	unix.Setfsuid(0)
	unix.Setfsgid(rootGID)
	if fsuid, fsgid := fsIDs(); fsuid != 0 || fsgid != rootGID {
		return fmt.Errorf("file system ids stayed %d:%d after an open as %d:%d; the thread is retired", fsuid, fsgid, uid, gid)
	}
	runtime.UnlockOSThread()
	return err
}

// fsIDs returns this thread's file system ids: setting an invalid id
// (-1) changes nothing and returns the current one.
func fsIDs() (uid, gid int) {
	uid, _ = unix.SetfsuidRetUid(-1)
	gid, _ = unix.SetfsgidRetGid(-1)
	return uid, gid
}
