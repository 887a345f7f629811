package process

import (
	"slices"

	"github.com/sandgate/sandgate/runner/protocol"
)

// List describes the tracked background processes, running and exited,
// oldest first.
func (m *Manager) List() protocol.ProcessList {
	m.mu.Lock()
	bs := append([]*background(nil), m.order...)
	m.mu.Unlock()
	l := protocol.ProcessList{Processes: make([]protocol.ProcessInfo, 0, len(bs))}
	for _, b := range bs {
		l.Processes = append(l.Processes, b.info())
	}
	return l
}

// get returns the background process id.
func (m *Manager) get(id string) (*background, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.procs[id]
	if !ok {
		return nil, protocol.Errorf(protocol.CodeNotFound, "no background process %q (it may have exited long ago and been forgotten); process.list shows the current ones", id)
	}
	return b, nil
}

// info describes b now.
func (b *background) info() protocol.ProcessInfo {
	i := protocol.ProcessInfo{
		ID:          b.id,
		Pid:         b.p.pid,
		Command:     b.command,
		Argv:        slices.Clone(b.argv),
		Cwd:         b.cwd,
		Tag:         b.tag,
		StartedAt:   b.p.started,
		Running:     true,
		OutputBytes: b.log.bytes(),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.end; e != nil {
		at, code := e.at, e.code
		i.Running = false
		i.EndedAt = &at
		i.ExitCode = &code
		i.Signal = e.signal
		i.OOMKilled = e.oom
		i.Message = e.message
	}
	return i
}
