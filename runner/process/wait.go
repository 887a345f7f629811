package process

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Waiting is done with raw wait calls on specific pids, never wait4(-1)
// and never exec.Cmd.Wait:
//
//   - a call's root process (our direct child) is waited for by its own
//     goroutine, first with waitid(WNOWAIT), which reports the exit but
//     leaves the zombie in place, and only after the tree has been swept
//     with wait4, which reaps it and returns its rusage. While the zombie
//     exists its pid, which is also the session and group id of the call,
//     cannot be reused, so killing the group and matching the session in
//     the sweep can never hit an unrelated process;
//   - orphans the runner adopted as subreaper are reaped one pid at a time
//     (reapZombie) after a fresh check that the pid is still that zombie.
//
// Other packages of the runner may start processes with os/exec; a
// wait4(-1) here would steal their exit statuses.

var self = os.Getpid()

// reapMu serialises every reap of an adopted orphan in the process, so
// that the check that a pid is still the same zombie and the wait4 that
// reaps it happen without another reaper in between.
var reapMu sync.Mutex

// waitExit blocks until the process pid (a direct child) has exited,
// without reaping it.
func waitExit(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// reapRoot reaps the direct child pid, which waitExit has seen exit.
func reapRoot(pid int) (unix.WaitStatus, unix.Rusage, error) {
	var (
		ws unix.WaitStatus
		ru unix.Rusage
	)
	for {
		_, err := unix.Wait4(pid, &ws, 0, &ru)
		if !errors.Is(err, unix.EINTR) {
			return ws, ru, err
		}
	}
}

// reapZombie reaps p if it is still a zombie child of the runner with the
// same start time, and reports whether it did, with its rusage.
func reapZombie(p procStat) (unix.Rusage, bool) {
	reapMu.Lock()
	defer reapMu.Unlock()
	var ru unix.Rusage
	now, err := readStat(p.pid)
	if err != nil || now.start != p.start || now.ppid != self || !now.zombie() {
		return ru, false
	}
	var ws unix.WaitStatus
	got, err := unix.Wait4(p.pid, &ws, unix.WNOHANG, &ru)
	return ru, err == nil && got == p.pid
}
