package process

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/protocol"
)

// background is one process started by Start, running or exited. The
// fields up to p are set before it is tracked and never change, so info
// reads them without a lock.
type background struct {
	id      string
	command string
	argv    []string // nil when started from a command string
	cwd     string   // resolved working directory
	tag     string
	p       *proc
	log     outputLog
	done    chan struct{} // closed once the tree is gone and end is set

	// stdin is a one-slot semaphore held while writing to or closing
	// stdin (Start's initial bytes, then Write calls in order); it guards
	// stdinClosed. A channel rather than a mutex so that a Write can give
	// up waiting behind a write the process does not read.
	stdin       chan struct{}
	stdinClosed bool

	mu  sync.Mutex
	end *ended // nil while running
}

// ended is a background process's final status.
type ended struct {
	at      time.Time
	code    int
	signal  string
	oom     bool
	message string
}

// Start starts req in the background and returns at once. Stdin stays
// open for Write (req.Stdin, if any, is written first); output goes to a
// bounded log read with Output. req.TimeoutMs, when not 0, kills the tree
// after that long.
//
// The process does not use the context of the request that started it:
// that request ends as soon as Start returns, and the process must outlive
// it (and the connection). It ends on its own, by Signal, by its timeout,
// or at Close. When its root exits, the rest of its tree is killed, as for
// Run: a background process's descendants live no longer than it does.
func (m *Manager) Start(req protocol.ExecRequest) (protocol.ProcessInfo, error) {
	if req.TimeoutMs < 0 {
		return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeInvalid, "timeout_ms must not be negative")
	}
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	c, err := m.prepare(req)
	if err != nil {
		return protocol.ProcessInfo{}, err
	}
	before := m.opts.Accounting.OOMKills()
	b, err := m.launch(c)
	if err != nil {
		return protocol.ProcessInfo{}, err
	}
	if len(req.Stdin) > 0 {
		b.stdin <- struct{}{} // taken here, so that later Writes come after
		go func() {
			defer func() { <-b.stdin }()
			_, _ = b.p.stdin.Write(req.Stdin) // until read, or the process exits
		}()
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() { defer pipes.Done(); _ = readChunks(b.p.stdout, func(d []byte) { b.log.add(false, d) }) }()
	go func() { defer pipes.Done(); _ = readChunks(b.p.stderr, func(d []byte) { b.log.add(true, d) }) }()
	go m.supervise(b, &pipes, timeout, before)
	return b.info(), nil
}

// launch checks the caps, spawns c and tracks it, under m.mu so that
// concurrent Starts cannot exceed maxRunning.
func (m *Manager) launch(c command) (*background, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "the runner is shutting down")
	}
	if n := m.running(); n >= maxRunning {
		return nil, protocol.Errorf(protocol.CodeTooLarge,
			"%d background processes are running, the most allowed; stop one with process.signal first", n)
	}
	p, err := spawn(c, true)
	if err != nil {
		return nil, err
	}
	m.wg.Add(1)
	b := &background{id: "p-" + randomID(4), command: c.display, cwd: c.dir, tag: c.tag, p: p,
		done: make(chan struct{}), stdin: make(chan struct{}, 1)}
	if !c.shell {
		b.argv = slices.Clone(c.argv)
	}
	m.procs[b.id] = b
	m.order = append(m.order, b)
	m.evict()
	return b, nil
}

// supervise waits for b's root to end, kills and reaps its tree, and
// records the exit status. The context given to waitEnd is Background on
// purpose: see Start.
func (m *Manager) supervise(b *background, pipes *sync.WaitGroup, timeout time.Duration, before cgroup.Snapshot) {
	defer m.wg.Done()
	why := m.waitEnd(context.Background(), b.p, timeout)
	o := m.finish(b.p, why)
	drain(b.p, pipes)
	after := m.afterState(o)
	e := &ended{at: time.Now(), code: -1, oom: oomKilled(before, after, o)}
	if o.reaped {
		e.code, e.signal = exitStatus(o.status)
	}
	e.message = message(why, e.oom, after.MemoryLimit, timeout)
	// Unblock a Write stuck on a full pipe, then close stdin for good.
	_ = b.p.stdin.SetWriteDeadline(time.Now())
	b.stdin <- struct{}{}
	b.stdinClosed = true
	b.p.closeAll()
	<-b.stdin
	b.mu.Lock()
	b.end = e
	b.mu.Unlock()
	close(b.done)
}

// running counts background processes not yet ended. m.mu is held.
func (m *Manager) running() int {
	n := 0
	for _, b := range m.procs {
		if !b.exited() {
			n++
		}
	}
	return n
}

// evict forgets the oldest exited processes beyond maxTracked. m.mu is
// held.
func (m *Manager) evict() {
	kept := m.order[:0]
	excess := len(m.order) - maxTracked
	for _, b := range m.order {
		if excess > 0 && b.exited() {
			delete(m.procs, b.id)
			excess--
			continue
		}
		kept = append(kept, b)
	}
	clear(m.order[len(kept):])
	m.order = kept
}

func (b *background) exited() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end != nil
}
