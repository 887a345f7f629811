package process

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// ending says why a call's root process ended.
type ending int

const (
	exited   ending = iota // on its own (or killed by something else)
	timedOut               // the call's timeout fired and the runner killed the tree
	canceled               // the caller cancelled, or the Manager closed
)

// Run executes req in the foreground. It emits stdout and stderr chunks
// as they are read (in order within each stream; emit is never called
// concurrently). It returns when the root process has exited and every
// process it started is dead and reaped; the result names the root's pid.
//
// The call's lifetime is bounded by three things, whichever comes first:
// the root's exit, the timeout (req.TimeoutMs, or DefaultTimeout) and ctx, which the dispatcher cancels on the gateway's cancel
// or a dropped connection; Close cancels every Run too. A timeout or a
// cancellation kills the tree and still returns a result, with TimedOut or
// Canceled set. An error (a *protocol.Error when the cause is the
// request's) means nothing was started and no event was emitted.
func (m *Manager) Run(ctx context.Context, req protocol.ExecRequest, emit func(protocol.Event)) (protocol.ExecResult, error) {
	timeout, err := m.runTimeout(req.TimeoutMs)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	limit, err := outputCap(req.OutputCap)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	c, err := m.prepare(req)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	if ctx.Err() != nil {
		return protocol.ExecResult{}, protocol.Errorf(protocol.CodeCanceled, "canceled")
	}
	if err := m.begin(); err != nil {
		return protocol.ExecResult{}, err
	}
	defer m.wg.Done()

	before := m.opts.Accounting.OOMKills()
	p, err := spawn(c, len(req.Stdin) > 0)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	defer p.closeAll()

	var emitMu sync.Mutex
	send := func(ev protocol.Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		emit(ev)
	}
	var (
		pipes          sync.WaitGroup
		stdout, stderr capped
	)
	pipes.Add(2)
	go func() { defer pipes.Done(); stdout = pump(p.stdout, protocol.EventStdout, limit, send) }()
	go func() { defer pipes.Done(); stderr = pump(p.stderr, protocol.EventStderr, limit, send) }()
	if p.stdin != nil {
		pipes.Add(1)
		go func() { defer pipes.Done(); feed(p.stdin, req.Stdin) }()
	}

	why := m.waitEnd(ctx, p, timeout)
	o := m.finish(p, why)
	drain(p, &pipes)

	res := m.result(o, before, m.afterState(o), timeout)
	res.Pid = p.pid
	res.StdoutBytes, res.StdoutTruncated = stdout.total, stdout.truncated
	res.StderrBytes, res.StderrTruncated = stderr.total, stderr.truncated
	return res, nil
}

// waitEnd blocks until p's root has exited, killing its group first when
// the timeout fires or ctx or the Manager is done. It does not reap the
// root.
func (m *Manager) waitEnd(ctx context.Context, p *proc, timeout time.Duration) ending {
	exit := make(chan struct{})
	go func() {
		if err := waitExit(p.pid); err != nil {
			m.log.Warn("wait for process", "call_id", p.t.id, "pid", p.pid, "error", err)
		}
		close(exit)
	}()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout - time.Since(p.started))
		defer t.Stop()
		expire = t.C
	}
	why := exited
	select {
	case <-exit:
		return exited
	case <-expire:
		why = timedOut
	case <-ctx.Done():
		why = canceled
	case <-m.ctx.Done():
		why = canceled
	}
	killGroup(p.pid, unix.SIGKILL)
	<-exit
	return why
}

// outcome is how a call's root ended, read when it was reaped.
type outcome struct {
	why      ending
	duration time.Duration
	status   unix.WaitStatus
	rusage   unix.Rusage
	reaped   bool          // false: the status could not be read
	cpu      time.Duration // of the whole tree, as far as it was reaped
	maxRSS   int64
}

// finish kills what is left of p's tree, reaps the root and forgets the
// tree. The root is reaped last: until then its pid, the call's session
// and group id, cannot be reused.
func (m *Manager) finish(p *proc, why ending) outcome {
	o := outcome{why: why, duration: time.Since(p.started)}
	p.t.sweep(m.log)
	p.mu.Lock()
	ws, ru, err := reapRoot(p.pid)
	p.reaped = true
	reg.remove(p.t)
	p.mu.Unlock()
	if err != nil {
		m.log.Warn("reap process", "call_id", p.t.id, "pid", p.pid, "error", err)
	}
	o.status, o.rusage, o.reaped = ws, ru, err == nil
	p.t.mu.Lock()
	o.cpu = time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + p.t.cpu
	o.maxRSS = max(ru.Maxrss*1024, p.t.maxRSS)
	p.t.mu.Unlock()
	return o
}
