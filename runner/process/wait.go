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
//
// It waits on a pidfd through Go's network poller where the kernel can
// (5.10 and later): a goroutine blocked in waitid holds the runner's one
// P in a system call, so Go's monitor thread naps on until it takes the
// P away, and the call's output waits for that. Parked on the poller,
// the goroutine leaves the runner idle while the command runs (runner
// CPU per call to an idle runner 4-8% lower, with either timer slack).
func waitExit(pid int) error {
	if err := pollExit(pid); !errors.Is(err, errNoPidfd) {
		return err
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// errNoPidfd says that pollExit could not watch the process, and waitid
// must do.
var errNoPidfd = errors.New("no pidfd")

// pollExit waits for pid's exit on a pidfd, without reaping it; it
// returns errNoPidfd when the kernel cannot give one or the poller cannot
// watch it. waitid with WNOWAIT can always be asked again.
func pollExit(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return errNoPidfd
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return errNoPidfd
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		for {
			werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			if !errors.Is(werr, unix.EINTR) {
				break
			}
		}
		// Signo 0: not exited yet, and the pidfd turns readable when it
		// has.
		return werr != nil || info.Signo != 0
	})
	if err != nil {
		return errNoPidfd
	}
	return werr
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
