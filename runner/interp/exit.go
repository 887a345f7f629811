package interp

import (
	"fmt"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/process"
)

// exitReason says how ip ended, in the words of a call's result: "killed:
// out of memory (limit 256 MiB)", "killed by SIGKILL", "exited with
// status 1". An OOM kill is recognised as runner/process recognises it
// for a call (process.KilledByOOM): the cgroup's OOM kill counter grew
// since ip.before, the last reading taken while ip was alive, and ip died
// of a SIGKILL the runner did not send.
func (m *Manager) exitReason(ip *interp) string {
	select {
	case <-ip.done:
	default:
		return "it could not be reaped"
	}
	if !ip.reaped {
		return "its exit status is unknown"
	}
	after := m.opts.Accounting.OOMState()
	ws := unix.WaitStatus(ip.status)
	switch {
	case process.KilledByOOM(ip.before, after, ws, ip.wasKilled()):
		return process.OOMMessage(after.MemoryLimit)
	case ws.Signaled():
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ws.ExitStatus())
}

// cutBytes cuts s to at most n bytes at a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
