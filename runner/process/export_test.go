package process

import (
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
)

// Internals exposed to the black-box tests.
var (
	ParseSignal    = parseSignal
	FormatBytes    = formatBytes
	FormatDuration = formatDuration
)

// Workdir resolves cwd as Run would.
func (m *Manager) Workdir(cwd string) (string, error) { return m.workdir(cwd) }

// OOM returns what a call whose root ended with status ws, on its own
// (killed false) or killed by the runner's timeout, says about memory.
func OOM(before, after cgroup.Snapshot, ws unix.WaitStatus, killed bool) (bool, string) {
	o := outcome{status: ws, reaped: true}
	if killed {
		o.why = timedOut
	}
	oom := oomKilled(before, after, o)
	return oom, message(o.why, oom, after.MemoryLimit, 5e9)
}
