package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Bounds of run_notebook. A notebook is read whole, so it must fit the
// runner's read cap; what the run adds is bounded too, so that a cell
// printing or plotting in a loop cannot grow the file (and the gateway's
// memory) without end.
const (
	maxNotebookBytes       = 10 << 20 // the runner's default read cap
	maxNotebookCodeCells   = 1000
	maxNotebookOutputBytes = 32 << 20 // all outputs written back together
	cellSummaryChars       = 200      // per cell, in the tool's result
)

// onError is what run_notebook does after a cell fails.
type onError string

const (
	onErrorStop     onError = "stop"
	onErrorContinue onError = "continue"
)

type runNotebookArgs struct {
	Path    string  `json:"path" jsonschema:"The .ipynb file (nbformat 4, python); relative paths resolve against /workspace. Its outputs are replaced and it is saved in place."`
	OnError string  `json:"on_error,omitempty" jsonschema:"stop (the default): cells after a failed one do not run and keep their old outputs; continue: run every cell."`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"Seconds each cell may run before it is interrupted (KeyboardInterrupt; default and maximum: the call timeout)."`
	Restart bool    `json:"restart,omitempty" jsonschema:"Restart the interpreter first, so that the notebook runs from a clean state (like Restart and Run All). Without it, the cells see what earlier run_code stateful calls defined."`
	sandboxArg
}

// notebookCell is one code cell's line in the summary.
type notebookCell struct {
	Index          int    `json:"index"` // in the notebook's cells, markdown included
	ExecutionCount int    `json:"execution_count"`
	Status         string `json:"status"` // ok, error, timeout
	ErrorName      string `json:"error_name,omitempty"`
	Output         string `json:"output,omitempty"` // the start of stdout, stderr, the result or the error
	Figures        int    `json:"figures,omitempty"`
}

// notebookOutput is run_notebook's structuredContent.
type notebookOutput struct {
	Path         string         `json:"path"`
	CodeCells    int            `json:"code_cells"`
	CellsRun     int            `json:"cells_run"`
	FailedCell   *int           `json:"failed_cell,omitempty"` // index of the first failed cell
	ErrorName    string         `json:"error_name,omitempty"`
	Error        string         `json:"error,omitempty"` // the first failure's last traceback line
	Stopped      bool           `json:"stopped"`         // cells were left unrun after a failure
	Restarted    bool           `json:"restarted"`       // the interpreter was (re)started during the run
	OutputsCut   bool           `json:"outputs_cut"`     // later cells' outputs were left out at the cap
	BytesWritten int64          `json:"bytes_written"`
	DurationMs   int64          `json:"duration_ms"`
	Cells        []notebookCell `json:"cells"`
	Message      string         `json:"message,omitempty"`
}

func notebookTools() []toolDef {
	return []toolDef{{category: catCode, needsBox: true, summary: summarize("path", "on_error"), run: runNotebook,
		tool: mcpapi.NewTool("run_notebook", argsSchema[runNotebookArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
			mcpapi.WithDescription("Run a Jupyter notebook (.ipynb, nbformat 4, python) in the sandbox's stateful interpreter, code cell by code cell, write the outputs (streams, results, matplotlib figures as PNG, errors) and execution counts back into the file, and return a summary. Markdown cells are skipped; everything else in the file is kept. A progress notification follows each cell. isError is set when a cell fails."))}}
}

func runNotebook(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[runNotebookArgs](c)
	if err != nil {
		return nil, err
	}
	mode := onError(a.OnError)
	switch mode {
	case "":
		mode = onErrorStop
	case onErrorStop, onErrorContinue:
	default:
		return nil, fmt.Errorf("on_error %q is not known; use stop or continue", a.OnError)
	}
	if strings.TrimSpace(a.Path) == "" {
		return nil, fmt.Errorf("path is empty; give the .ipynb file to run")
	}
	timeoutMs, err := c.timeoutMs(a.Timeout)
	if err != nil {
		return nil, err
	}
	path, data, err := c.readNotebook(ctx, a.Path)
	if err != nil {
		return nil, err
	}
	nb, err := parseNotebook(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	r := &notebookRun{c: c, nb: nb, mode: mode, timeoutMs: timeoutMs, began: time.Now(),
		out: notebookOutput{Path: path, Cells: []notebookCell{}}}
	for _, cell := range nb.cells {
		if cell.kind == "code" {
			r.out.CodeCells++
		}
	}
	if r.out.CodeCells > maxNotebookCodeCells {
		return nil, fmt.Errorf("%s has %d code cells; run_notebook runs at most %d: split the notebook", path, r.out.CodeCells, maxNotebookCodeCells)
	}
	r.progress = newOutput(c.req, 0)
	if a.Restart {
		if err := r.restart(ctx); err != nil {
			return nil, err
		}
	}
	runErr := r.cells(ctx)
	if r.out.CellsRun > 0 {
		if err := r.save(ctx); err != nil {
			return nil, err
		}
	}
	if runErr != nil {
		r.progress.settle(runErr.Error())
		if r.out.CellsRun > 0 {
			return nil, fmt.Errorf("%w (the outputs of the %d cell(s) that ran were saved to %s)", runErr, r.out.CellsRun, path)
		}
		return nil, runErr
	}
	r.out.DurationMs = time.Since(r.began).Milliseconds()
	r.record()
	text := notebookText(r.out)
	r.progress.sent = r.out.CodeCells // the save is the last step
	r.progress.settle(lastLine(text))
	return structured(r.out, text, r.out.FailedCell != nil), nil
}

// readNotebook reads the whole notebook, refusing one above the cap.
func (c *call) readNotebook(ctx context.Context, path string) (string, []byte, error) {
	res, data, err := c.readFile(ctx, protocol.ReadRequest{Path: path, Limit: maxNotebookBytes})
	if err != nil {
		return "", nil, err
	}
	if res.Size > maxNotebookBytes {
		return "", nil, fmt.Errorf("%s is %d bytes; run_notebook reads notebooks up to %d MiB: clear its outputs first (jupyter nbconvert --clear-output) or split it", res.Path, res.Size, maxNotebookBytes>>20)
	}
	if data == nil {
		data = []byte(res.Content)
		if res.Encoding == protocol.EncodingBase64 {
			if data, err = base64.StdEncoding.DecodeString(res.Content); err != nil {
				return "", nil, fmt.Errorf("decode %s: %w", res.Path, err)
			}
		}
	}
	return res.Path, data, nil
}

// save writes the notebook back atomically (the runner's file.write is a
// temp file and a rename). It runs even when the call was canceled after
// some cells ran, so their outputs are kept.
func (r *notebookRun) save(ctx context.Context) error {
	data, err := r.nb.encode()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	req := protocol.WriteRequest{Path: r.out.Path}
	var res protocol.WriteResult
	if r.c.runner.Payloads() {
		_, err = r.c.runner.CallPayload(ctx, protocol.OpFileWrite, req, data, &res)
	} else {
		req.Content = string(data)
		err = r.c.runner.Call(ctx, protocol.OpFileWrite, req, &res)
	}
	if err != nil {
		return fmt.Errorf("save the notebook's outputs to %s: %w", r.out.Path, err)
	}
	r.out.BytesWritten = res.Bytes
	return nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
