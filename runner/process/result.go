package process

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/protocol"
)

// runTimeout returns the timeout of a Run.
func (m *Manager) runTimeout(ms int64) (time.Duration, error) {
	return Timeout(ms, m.opts.DefaultTimeout)
}

// Timeout turns a request's timeout_ms into a duration: def when it is 0,
// an error when negative, and otherwise exactly what was asked. The
// gateway decides the limit (its --call-timeout) and sends it with every
// request; the runner applies it rather than re-deciding a cap of its
// own, so that one setting is the one limit.
func Timeout(ms int64, def time.Duration) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, protocol.Errorf(protocol.CodeInvalid, "timeout_ms must not be negative")
	case ms == 0:
		return def, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
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

// oomKilled reports whether the call was killed for memory (see
// KilledByOOM); without the root's status nothing is guessed.
func oomKilled(before, after cgroup.Snapshot, o outcome) bool {
	return o.reaped && KilledByOOM(before, after, o.status, o.why != exited)
}

// afterState reads the cgroup's OOM state at the end of a call, or
// returns none when o's exit status is not one an OOM kill leaves
// (KilledByOOM would say no whatever the counter): most calls end so,
// and skip reading two cgroup files.
func (m *Manager) afterState(o outcome) cgroup.Snapshot {
	if !o.reaped || !oomSignature(o.status, o.why != exited) {
		return cgroup.Snapshot{}
	}
	return m.opts.Accounting.OOMState()
}

// KilledByOOM reports whether a process that ended with status ws was
// killed for memory: the cgroup's OOM kill counter grew between before
// and after, and the process died of a SIGKILL the runner did not send
// (killedByRunner false), or it is a shell that reports a child's SIGKILL
// (exit 137). The counter is container-wide, so an OOM kill elsewhere in
// the sandbox is attributed to this process when it died of an
// unexplained SIGKILL too. Without the counter nothing is guessed.
// Packages that run their own long-lived processes (runner/interp) use it
// so that every OOM report in the runner follows the same rule.
func KilledByOOM(before, after cgroup.Snapshot, ws unix.WaitStatus, killedByRunner bool) bool {
	if !before.HasOOMKills || !after.HasOOMKills || after.OOMKills <= before.OOMKills {
		return false
	}
	return oomSignature(ws, killedByRunner)
}

// oomSignature reports whether ws is how an OOM kill ends a process: a
// SIGKILL the runner did not send, or a shell's exit 137.
func oomSignature(ws unix.WaitStatus, killedByRunner bool) bool {
	code, sig := exitStatus(ws)
	return sig == "SIGKILL" && !killedByRunner || code == 128+int(unix.SIGKILL)
}

// OOMMessage is what a result says of an OOM kill under the memory limit
// limit (0: unknown): "killed: out of memory (limit 512 MiB)".
func OOMMessage(limit int64) string {
	if limit > 0 {
		return fmt.Sprintf("killed: out of memory (limit %s)", formatBytes(limit))
	}
	return "killed: out of memory"
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
	case oom:
		return OOMMessage(limit)
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
