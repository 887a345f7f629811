//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on f without waiting. The kernel
// releases it when f is closed or the process dies, so a crashed gateway
// never leaves the log locked.
func lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
