package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/runner/protocol"
)

// notebookRun is one run_notebook call in progress.
type notebookRun struct {
	c         *call
	nb        *notebook
	mode      onError
	timeoutMs int64
	began     time.Time
	// progress sends the per-cell notifications; its sent counts the code
	// cells done, and the save is the last step.
	progress    *output
	out         notebookOutput
	outputBytes int  // of the outputs written so far
	timedOut    bool // the first failure was a timeout
	notes       []string
}

// cells runs the code cells in order and puts their outputs in the
// notebook. An error is a fault of the runner or the call (not of a
// cell); the cells that ran before it keep their outputs.
func (r *notebookRun) cells(ctx context.Context) error {
	defer func() { r.out.Message = strings.Join(r.notes, "; ") }()
	for i := range r.nb.cells {
		cell := &r.nb.cells[i]
		if cell.kind != "code" {
			continue
		}
		if r.out.FailedCell != nil && r.mode == onErrorStop {
			r.out.Stopped = true
			break
		}
		if strings.TrimSpace(cell.source) == "" {
			// Jupyter does not run an empty cell either.
			cell.set("outputs", []nbOutput{})
			cell.set("execution_count", nil)
			r.step(fmt.Sprintf("cell %d: empty", i))
			continue
		}
		res, err := r.runCell(ctx, cell.source)
		if err != nil {
			return fmt.Errorf("run cell %d: %w", i, err)
		}
		r.out.CellsRun++
		count := r.out.CellsRun
		if res.Restarted {
			r.out.Restarted = true
			r.notes = append(r.notes, fmt.Sprintf("a new interpreter was started for cell %d, so state from earlier cells was gone", i))
		}
		r.budget(&res)
		cell.set("outputs", cellOutputs(res, count))
		cell.set("execution_count", count)
		summary := cellSummary(i, count, res)
		r.out.Cells = append(r.out.Cells, summary)
		if summary.Status != "ok" && r.out.FailedCell == nil {
			r.out.FailedCell, r.out.ErrorName, r.timedOut = &i, summary.ErrorName, res.TimedOut
			r.out.Error = summary.Output
		}
		r.step(fmt.Sprintf("cell %d [%d]: %s", i, count, summary.Status))
	}
	return nil
}

// runCell runs one cell in the interpreter.
func (r *notebookRun) runCell(ctx context.Context, src string) (protocol.InterpResult, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(r.timeoutMs)*time.Millisecond+interpSlack)
	defer cancel()
	var res protocol.InterpResult
	req := protocol.InterpRequest{Language: string(protocol.Python), Code: src, TimeoutMs: r.timeoutMs}
	if err := r.c.runner.Call(ctx, protocol.OpInterpRun, req, &res); err != nil {
		return res, interpError(err)
	}
	return res, nil
}

// restart starts the run with a fresh interpreter.
func (r *notebookRun) restart(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.c.g.cfg.Limits.CallTimeout+interpSlack)
	defer cancel()
	var res protocol.InterpResult
	if err := r.c.runner.Call(ctx, protocol.OpInterpRestart, protocol.InterpRestartRequest{Language: string(protocol.Python)}, &res); err != nil {
		return interpError(err)
	}
	if !res.Restarted {
		return fmt.Errorf("restart the interpreter: %s", res.Message)
	}
	r.out.Restarted = true
	return nil
}

// budget leaves a cell's streams, result and figures out once the
// notebook's outputs reach maxNotebookOutputBytes; errors (64 KiB at most
// each) are always kept.
func (r *notebookRun) budget(res *protocol.InterpResult) {
	size := len(res.Stdout) + len(res.Stderr) + len(res.Result) + len(res.Error)
	for _, f := range res.Figures {
		size += len(f) * 4 / 3 // base64
	}
	if r.outputBytes+size <= maxNotebookOutputBytes {
		r.outputBytes += size
		return
	}
	res.Stdout, res.Stderr, res.Result, res.HasResult, res.Figures = "", "", "", false, nil
	note := fmt.Sprintf("output left out: the notebook's outputs reached run_notebook's %d MiB cap", maxNotebookOutputBytes>>20)
	res.Message = strings.TrimPrefix(res.Message+"; "+note, "; ")
	if !r.out.OutputsCut {
		r.notes = append(r.notes, note)
	}
	r.out.OutputsCut = true
}

// step sends one progress notification (when the client asked for them)
// and one log record (logger "notebook") for a code cell done.
func (r *notebookRun) step(msg string) {
	o := r.progress
	o.sent++
	if o.notify == nil {
		return
	}
	o.notify.Progress(o.sent, r.out.CodeCells+1, msg)
	o.notify.Log("notebook", msg)
}

// record copies the outcome into the tool.end audit record: the failed
// cell and its exception's name, never output, which may quote user data.
func (r *notebookRun) record() {
	e := r.c.end
	switch {
	case r.out.FailedCell == nil:
		e.Outcome = "ok"
		return
	case r.timedOut:
		e.Outcome, e.TimedOut = "timeout", true
	default:
		e.Outcome = "error"
	}
	e.Error = audit.Clip(fmt.Sprintf("cell %d: %s", *r.out.FailedCell, r.out.ErrorName), 500)
}

// cellSummary is a cell's line in the result.
func cellSummary(index, count int, res protocol.InterpResult) notebookCell {
	s := notebookCell{Index: index, ExecutionCount: count, Status: "ok", Figures: len(res.Figures)}
	var text string
	switch {
	case res.TimedOut:
		s.Status, s.ErrorName = "timeout", res.ErrorName
		text = res.Message
	case res.Error != "":
		s.Status, s.ErrorName = "error", res.ErrorName
		text = lastLine(res.Error)
	default:
		var parts []string
		for _, p := range []string{res.Stdout, res.Stderr, res.Result} {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		text = strings.Join(parts, "\n")
	}
	s.Output = audit.Clip(text, cellSummaryChars)
	return s
}

// notebookText is the text content: one line per code cell run, then the
// outcome.
func notebookText(o notebookOutput) string {
	var b strings.Builder
	for _, c := range o.Cells {
		fmt.Fprintf(&b, "cell %d [%d] %s", c.Index, c.ExecutionCount, c.Status)
		if c.Figures > 0 {
			fmt.Fprintf(&b, " (%d figure(s))", c.Figures)
		}
		if c.Output != "" {
			fmt.Fprintf(&b, ": %s", strings.ReplaceAll(c.Output, "\n", " ⏎ "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "ran %d of %d code cells in %d ms", o.CellsRun, o.CodeCells, o.DurationMs)
	if o.FailedCell != nil {
		fmt.Fprintf(&b, "; cell %d failed (%s)", *o.FailedCell, o.ErrorName)
		if o.Stopped {
			b.WriteString(", so the cells after it did not run (on_error: stop)")
		}
	}
	if o.Message != "" {
		fmt.Fprintf(&b, "; %s", o.Message)
	}
	if o.BytesWritten > 0 {
		fmt.Fprintf(&b, "; saved %s (%d bytes)", o.Path, o.BytesWritten)
	}
	return b.String()
}
