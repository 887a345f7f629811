package process

import (
	"errors"

	"golang.org/x/sys/unix"
)

// signalVerified sends sig to p.pid only if that pid still names the
// process p seen in a scan (same start time): between the scan and the
// kill the process may have died and its pid been given to an unrelated
// process. With a pidfd the check and the signal refer to one process for
// sure; without one (kernel before 5.3, or a seccomp profile that refuses
// pidfd_open) a window of a few microseconds remains.
func signalVerified(p procStat, sig unix.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return
		}
		if same(p) {
			_ = unix.Kill(p.pid, sig)
		}
		return
	}
	defer unix.Close(fd)
	if same(p) {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}

// same reports whether p.pid is still the process p.
func same(p procStat) bool {
	now, err := readStat(p.pid)
	return err == nil && now.start == p.start
}

// killGroup sends sig to the process group pgid. Callers hold the group's
// leader unreaped (a zombie at worst), so the number cannot name a new
// group.
func killGroup(pgid int, sig unix.Signal) {
	if pgid > 1 {
		_ = unix.Kill(-pgid, sig)
	}
}
