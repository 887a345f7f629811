package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A sandbox's socket dir is a host directory bind-mounted at
// /run/sandgate. The runner must create its socket there, so the dir is
// open to the sandbox user while the container starts; but a dir the
// sandbox can write is host disk outside every size limit (a `dd` into
// /run/sandgate, or an upload there, fills the disk the audit log is on).
// So once the runner listens, the dir is sealed: it becomes the
// gateway's, mode 0700, and nothing in the sandbox can create, replace or
// even see anything in it again. The runner keeps serving on the socket
// it already bound: accept(2) needs no access to the path. Before the seal
// only the runner and the container's init run in the sandbox; user code
// runs only through the runner, after Create returns.
//
// Recreate opens the dir again for the new runner (openSocketDir) and
// seals it once that runner listens. An adopted sandbox made by an older
// gateway, whose dir was never sealed, is sealed when it is found (Get).

// socketDirMode is a sealed socket dir's mode: the gateway's alone.
const socketDirMode = 0o700

// makeSocketDir creates the sandbox's socket dir, failing if it exists so
// that a Create never adopts (and later removes) another sandbox's dir,
// and opens it to the sandbox user.
func (p *Provider) makeSocketDir(dir string) error {
	if err := os.Mkdir(dir, socketDirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("make socket dir %s: sandbox id already in use", dir)
		}
		return fmt.Errorf("make socket dir %s: %w", dir, err)
	}
	if err := p.openSocketDir(dir); err != nil {
		os.Remove(dir)
		return err
	}
	return nil
}

// openSocketDir lets the sandbox user create its runner socket in dir,
// and removes the socket a previous runner left, which the new runner
// could not replace while the dir was sealed.
func (p *Provider) openSocketDir(dir string) error {
	if err := p.grantSocketDir(dir); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, SocketName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the old runner socket in %s: %w", dir, err)
	}
	return nil
}

// grantSocketDir lets the sandbox user create its runner socket in dir.
// A runner restored from a checkpoint replaces its old socket itself: it
// must find it there (gVisor checks, on restore, that the files it had
// seen still exist).
func (p *Provider) grantSocketDir(dir string) error {
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, p.uid, p.gid); err != nil {
			return fmt.Errorf("give socket dir %s to the sandbox user %d:%d: %w", dir, p.uid, p.gid, err)
		}
	} else if err := os.Chmod(dir, 0o777); err != nil {
		// Not root, so the dir cannot be given to the sandbox uid. 0777
		// is safe while it lasts: the parent SocketDir is 0700 and ours,
		// so no other host user can reach this dir, and inside the
		// container only this sandbox sees it, before any user code runs.
		return fmt.Errorf("open socket dir %s to the sandbox user: %w", dir, err)
	}
	return nil
}

// sealSocketDir takes dir back from the sandbox user once its runner
// listens; see the comment at the top of this file. It is cheap when dir
// is sealed already (one stat).
func (p *Provider) sealSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("seal socket dir %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && fi.IsDir() && int(st.Uid) == os.Geteuid() && fi.Mode().Perm() == socketDirMode {
		return nil
	}
	if os.Geteuid() == 0 {
		// Lchown: dir is a directory Create made, but never follow a link.
		if err := os.Lchown(dir, 0, 0); err != nil {
			return fmt.Errorf("seal socket dir %s: take it from the sandbox user: %w", dir, err)
		}
	}
	if err := os.Chmod(dir, socketDirMode); err != nil {
		return fmt.Errorf("seal socket dir %s: %w", dir, err)
	}
	return nil
}
