package interp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// fenceWait bounds the wait for a cell's fences after its reply. The
// driver writes them before it replies, behind at most a pipe's worth of
// output, so they are normally there already.
const fenceWait = 5 * time.Second

// ending says how a cell ended.
type ending int

const (
	replied ending = iota // the driver answered
	died                  // the interpreter ended during the cell
	stuck                 // it ignored the interrupt for the grace and was killed
	closing               // the Manager closed and killed it
)

// cellEnd is how one cell ended and what it wrote.
type cellEnd struct {
	how            ending
	reply          reply
	timedOut       bool // the deadline passed and the cell was interrupted
	canceled       bool // ctx ended and the cell was interrupted
	stdout, stderr output
}

// cell runs code in ip and collects its output; emit, when not nil, is
// given it as stdout and stderr events while the cell runs.
func (m *Manager) cell(ctx context.Context, ip *interp, code string, deadline time.Time, emit func(protocol.Event)) cellEnd {
	ip.cells++
	fence := "\x00sandgate-fence-" + randomHex(16) + "\x00"
	fenced := []<-chan struct{}{
		ip.stdout.arm([]byte(fence), sink(emit, protocol.EventStdout)),
		ip.stderr.arm([]byte(fence), sink(emit, protocol.EventStderr)),
	}
	ip.before = m.opts.Accounting.OOMKills()
	var e cellEnd
	if err := send(ip.requests, request{Cell: ip.cells, Code: code, Fence: fence}, deadline); err != nil {
		// A driver that is alive reads its requests at once between
		// cells; one that does not is dead or beyond saving.
		e.how, e.timedOut = died, errors.Is(err, os.ErrDeadlineExceeded)
		if e.timedOut {
			e.how = stuck
		}
		ip.kill(m)
	} else {
		m.await(ctx, ip, deadline, &e)
	}
	switch e.how {
	case replied:
		if e.reply.Fenced && !waitFences(ip, fenced) {
			m.log.Warn("cell output fences late; output may be attributed to the next cell", "pid", ip.pid)
		}
		ip.before = m.opts.Accounting.OOMKills()
	case died:
		// An interpreter without its control pipe is of no use.
		select {
		case <-ip.done:
		case <-time.After(time.Second):
			ip.kill(m)
		}
		ip.drain()
	default:
		ip.drain()
	}
	e.stdout, e.stderr = ip.stdout.take(), ip.stderr.take()
	return e
}

// await waits for the cell's reply, interrupting the cell at the deadline
// or when ctx ends and killing the interpreter a grace later.
func (m *Manager) await(ctx context.Context, ip *interp, deadline time.Time, e *cellEnd) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var grace, gone <-chan time.Time
	ctxDone, exited := ctx.Done(), ip.done
	interrupt := func() {
		if grace == nil {
			ip.interrupt()
			grace = time.After(m.opts.Grace)
		}
	}
	for {
		select {
		case line, ok := <-ip.replies:
			if !ok {
				e.how = died
				return
			}
			var r reply
			if err := json.Unmarshal(line, &r); err != nil || r.Cell != ip.cells {
				m.log.Warn("ignored a control line that is not the cell's reply", "pid", ip.pid)
				continue
			}
			e.how, e.reply = replied, r
			return
		case <-exited:
			// A reply written just before the end is still in the pipe,
			// which ends once the interpreter's group is gone.
			exited, gone = nil, time.After(drainWait)
		case <-gone:
			e.how = died
			return
		case <-timer.C:
			e.timedOut = true
			interrupt()
		case <-ctxDone:
			ctxDone, e.canceled = nil, true
			interrupt()
		case <-grace:
			ip.kill(m)
			e.how = stuck
			return
		case <-m.ctx.Done():
			ip.kill(m)
			e.how = closing
			return
		}
	}
}

// waitFences waits until both output streams have passed the cell's
// fence, and reports whether they did.
func waitFences(ip *interp, fenced []<-chan struct{}) bool {
	t := time.NewTimer(fenceWait)
	defer t.Stop()
	for _, f := range fenced {
		select {
		case <-f:
			continue
		default:
		}
		select {
		case <-f:
		case <-ip.done:
			return false
		case <-t.C:
			return false
		}
	}
	return true
}

// sink turns a stream's output into events of type typ for emit; nil
// when there is no emit.
func sink(emit func(protocol.Event), typ protocol.EventType) func([]byte) {
	if emit == nil {
		return nil
	}
	return func(p []byte) { emit(protocol.Event{Type: typ, Data: bytes.Clone(p)}) }
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
