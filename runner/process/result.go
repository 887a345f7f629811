package process

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/protocol"
)

// runTimeout returns the timeout of a Run: the request's, or the default,
// capped at MaxTimeout.
func (m *Manager) runTimeout(ms int64) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, protocol.Errorf(protocol.CodeInvalid, "timeout_ms must not be negative")
	case ms == 0:
		return m.opts.DefaultTimeout, nil
	}
	return min(time.Duration(ms)*time.Millisecond, m.opts.MaxTimeout), nil
}

// outputCap returns the per-stream output cap of a request.
func outputCap(n int64) (int64, error) {
	switch {
	case n < 0:
		return 0, protocol.Errorf(protocol.CodeInvalid, "output_cap must not be negative")
	case n == 0:
		return protocol.DefaultOutputCap, nil
	}
	return n, nil
}

// exitStatus returns the exit code, or -1 and the signal's name.
func exitStatus(ws unix.WaitStatus) (int, string) {
	if ws.Signaled() {
		return -1, unix.SignalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

// oomKilled reports whether the call was killed for memory: the cgroup's
// OOM kill counter grew during the call and the root died of a SIGKILL the
// runner did not send, or it is a shell that reports a child's SIGKILL
// (exit 137). The counter is container-wide, so an OOM kill in a
// concurrent call can be attributed to this one when this one died of an
// unexplained SIGKILL too. Without the counter nothing is guessed.
func oomKilled(before, after cgroup.Snapshot, o outcome) bool {
	if !before.HasOOMKills || !after.HasOOMKills || after.OOMKills <= before.OOMKills || !o.reaped {
		return false
	}
	code, sig := exitStatus(o.status)
	return sig == "SIGKILL" && o.why == exited || code == 128+int(unix.SIGKILL)
}

// result turns an outcome into the ExecResult of a Run (output counters
// aside).
func (m *Manager) result(o outcome, before, after cgroup.Snapshot, timeout time.Duration) protocol.ExecResult {
	r := protocol.ExecResult{
		ExitCode:        -1,
		DurationMs:      o.duration.Milliseconds(),
		CPUMs:           o.cpu.Milliseconds(),
		MemoryPeakBytes: o.maxRSS,
		TimedOut:        o.why == timedOut,
		Canceled:        o.why == canceled,
		OOMKilled:       oomKilled(before, after, o),
	}
	if o.reaped {
		r.ExitCode, r.Signal = exitStatus(o.status)
	}
	r.Message = message(o.why, r.OOMKilled, after.MemoryLimit, timeout)
	return r
}

// message explains an abnormal end in words a user can act on.
func message(why ending, oom bool, limit int64, timeout time.Duration) string {
	switch {
	case oom && limit > 0:
		return fmt.Sprintf("killed: out of memory (limit %s)", formatBytes(limit))
	case oom:
		return "killed: out of memory"
	case why == timedOut:
		return fmt.Sprintf("timed out after %s; the process tree was killed", formatDuration(timeout))
	case why == canceled:
		return "canceled"
	}
	return ""
}

// formatBytes writes a memory limit as people set it: "512 MiB", "2 GiB".
func formatBytes(n int64) string {
	const mib, gib = 1 << 20, 1 << 30
	switch {
	case n < mib:
		return fmt.Sprintf("%d bytes", n)
	case n >= gib && n%gib == 0:
		return fmt.Sprintf("%d GiB", n/gib)
	case n%mib == 0:
		return fmt.Sprintf("%d MiB", n/mib)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/mib)
}

// formatDuration writes d without zero tails: "5s", "1m", "1m30s", "2h".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
