package process

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// signalWait is how long Signal waits for a terminating signal to end the
// process, so that the ProcessInfo it returns usually shows the end.
const signalWait = time.Second

// Signal sends req.Signal (default SIGTERM) to a background process's
// whole tree: its process group, and the members of its tree outside the
// group (setsid children, see tree). After SIGKILL the root's exit makes
// the supervisor sweep the tree. Signalling a process that has exited is
// not an error; the returned info shows how it ended.
func (m *Manager) Signal(req protocol.ProcessSignalRequest) (protocol.ProcessInfo, error) {
	sig, err := parseSignal(req.Signal)
	if err != nil {
		return protocol.ProcessInfo{}, err
	}
	b, err := m.get(req.ID)
	if err != nil {
		return protocol.ProcessInfo{}, err
	}
	if b.p.signal(sig) && terminating(sig) {
		select {
		case <-b.done:
		case <-time.After(signalWait):
		}
	}
	return b.info(), nil
}

// signal sends sig to p's tree unless p's root has been reaped (its pid
// and group id could then name another process), and reports whether it
// did.
func (p *proc) signal(sig unix.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return false
	}
	killGroup(p.pid, sig)
	ms, _ := p.t.members(scanProcs(), -1)
	for _, mp := range ms {
		if mp.pgrp != p.pid && !mp.zombie() {
			signalVerified(mp, sig)
		}
	}
	return true
}

func terminating(sig unix.Signal) bool {
	switch sig {
	case unix.SIGKILL, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT:
		return true
	}
	return false
}

// parseSignal accepts "SIGTERM", "TERM", "term" or a number; "" is SIGTERM.
func parseSignal(s string) (unix.Signal, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return 0, protocol.Errorf(protocol.CodeInvalid, "signal number %d is out of range 1-64", n)
		}
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, protocol.Errorf(protocol.CodeInvalid, "unknown signal %q; use a name such as SIGTERM, SIGINT or SIGKILL, or a number", s)
}

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
