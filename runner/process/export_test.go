package process

import (
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/protocol"
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

// SpawnAlone starts req, waits for its root to exit and reports whether
// the sweep would find the tree alone without looking at /proc, then
// ends the call as Run does.
func (m *Manager) SpawnAlone(req protocol.ExecRequest) (bool, error) {
	c, err := m.prepare(req)
	if err != nil {
		return false, err
	}
	p, err := spawn(c, false)
	if err != nil {
		return false, err
	}
	defer p.closeAll()
	if err := waitExit(p.pid); err != nil {
		return false, err
	}
	alone := p.t.alone()
	m.finish(p, exited)
	return alone, nil
}
