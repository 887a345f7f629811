package interp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Caps the runner enforces on what the driver returns (the driver cuts
// first, more gracefully; these hold even if it does not).
const (
	maxResultBytes  = 64 << 10
	maxErrorBytes   = 64 << 10
	maxFigureBytes  = 8 << 20 // all of a cell's figures together
	diedErrorName   = "InterpreterDied"
	interruptedName = "KeyboardInterrupt"
)

// Run executes one cell in the interpreter, starting one first when there
// is none (Restarted and Message say so when an earlier one died). It is
// Stream without events: the output comes in the result.
func (m *Manager) Run(ctx context.Context, req protocol.InterpRequest) (protocol.InterpResult, error) {
	req.Stream = false
	return m.Stream(ctx, req, nil)
}

// Stream executes one cell as Run does; when req.Stream is set, the
// cell's output goes to emit as stdout and stderr events as the
// interpreter writes it (within the same caps), and the result's Stdout
// and Stderr are left empty.
//
// The call's timeout (req.TimeoutMs, or DefaultTimeout) covers its wait for the turn and the cell. When it passes,
// or ctx ends, the interpreter gets a SIGINT, which raises
// KeyboardInterrupt in the cell and keeps the interpreter's state; if the
// cell has not ended Grace later, the interpreter is killed and a new one
// started. Errors are *protocol.Error when the request is at fault;
// everything that happens to the cell, including the interpreter's
// death, is a result.
func (m *Manager) Stream(ctx context.Context, req protocol.InterpRequest, emit func(protocol.Event)) (protocol.InterpResult, error) {
	if err := checkLanguage(req.Language); err != nil {
		return protocol.InterpResult{}, err
	}
	timeout, err := m.timeout(req.TimeoutMs)
	if err != nil {
		return protocol.InterpResult{}, err
	}
	began := time.Now()
	deadline := began.Add(timeout)
	if err := m.acquire(ctx, deadline); errors.Is(err, errBusy) {
		return protocol.InterpResult{TimedOut: true, DurationMs: time.Since(began).Milliseconds(),
			Message: fmt.Sprintf("timed out after %s waiting for another cell to end; this cell did not run", timeout)}, nil
	} else if err != nil {
		return protocol.InterpResult{}, err
	}
	defer m.release()
	ip, res, err := m.ready(ctx)
	if err != nil {
		return protocol.InterpResult{}, err
	}
	var notes []string
	if res.Message != "" {
		notes = append(notes, res.Message)
	}
	if !req.Stream {
		emit = nil
	}
	e := m.cell(ctx, ip, req.Code, deadline, emit)
	if emit == nil {
		res.Stdout, res.Stderr = string(e.stdout.data), string(e.stderr.data)
	}
	res.TimedOut = e.timedOut
	switch e.how {
	case replied:
		notes = append(notes, fillReply(&res, e)...)
		if e.timedOut || e.canceled {
			notes = append(notes, fmt.Sprintf("%s: the cell was interrupted (%s); the interpreter kept its state", stopReason(e, timeout), interruptedName))
		}
	case died:
		reason := m.exitReason(ip)
		m.discard()
		m.gone = reason
		res.ErrorName = diedErrorName
		res.Error = fmt.Sprintf("%s: the interpreter died while running this cell (%s)", diedErrorName, reason)
		notes = append(notes, "its state is gone; the next call starts a new interpreter")
	case stuck:
		m.discard()
		note := fmt.Sprintf("%s and the cell did not stop within %s of the interrupt (%s), so the interpreter was killed", stopReason(e, timeout), m.opts.Grace, interruptedName)
		if m.ip, err = m.start(context.WithoutCancel(ctx)); err != nil {
			note += fmt.Sprintf("; earlier state is gone, and a new interpreter could not be started yet (%v)", err)
		} else {
			res.Restarted = true
			note += "; a new one was started and earlier state is gone"
		}
		notes = append(notes, note)
	case closing:
		return protocol.InterpResult{}, errClosed()
	}
	for _, s := range []struct {
		name string
		out  output
	}{{"stdout", e.stdout}, {"stderr", e.stderr}} {
		if s.out.truncated() {
			notes = append(notes, fmt.Sprintf("%s was cut at the 1 MiB cap (%d bytes written)", s.name, s.out.total))
		}
	}
	res.Message = strings.Join(notes, "; ")
	res.DurationMs = time.Since(began).Milliseconds()
	return res, nil
}

// fillReply copies the driver's reply into res within the runner's caps,
// and returns notes on what was cut.
func fillReply(res *protocol.InterpResult, e cellEnd) (notes []string) {
	r := e.reply
	res.HasResult = r.HasResult
	res.Result = cutBytes(r.Result, maxResultBytes)
	if r.ResultCut || len(res.Result) < len(r.Result) {
		notes = append(notes, "the result's repr was cut to 64 KiB")
	}
	res.Error, res.ErrorName = cutBytes(r.Error, maxErrorBytes), r.ErrorName
	omitted, total := r.FiguresOmitted, 0
	for _, f := range r.Figures {
		if total+len(f) > maxFigureBytes {
			omitted++
			continue
		}
		total += len(f)
		res.Figures = append(res.Figures, f)
	}
	if omitted > 0 {
		notes = append(notes, fmt.Sprintf("%d figure(s) left out: a cell's figures are capped at 8 MiB of PNG", omitted))
	}
	return notes
}

// stopReason says why a cell was interrupted.
func stopReason(e cellEnd, timeout time.Duration) string {
	if e.timedOut {
		return "timed out after " + timeout.String()
	}
	return "canceled"
}
