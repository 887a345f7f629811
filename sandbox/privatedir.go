package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// MakePrivateDir creates dir 0700, or checks that an existing dir is a
// directory owned by this process's user that no one else may enter. It
// never chmods an existing dir: a misconfigured path such as /tmp must
// fail, not lock the host's /tmp. what names the dir in errors ("socket
// dir", "workspace root"). The per-sandbox dirs below such a dir are
// safe whatever their own mode, because no other host user can reach
// them.
func MakePrivateDir(dir, what string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s %s: %w", what, dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s %s: %w", what, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("check %s %s: not a directory", what, dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("check %s %s: owned by uid %d, not by this process (uid %d); use a dedicated dir", what, dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("check %s %s: mode %v lets other users in; use a dedicated dir with mode 0700", what, dir, fi.Mode().Perm())
	}
	return nil
}
