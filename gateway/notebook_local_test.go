package gateway_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// notebookResult mirrors run_notebook's documented structuredContent.
type notebookResult struct {
	Path         string `json:"path"`
	CodeCells    int    `json:"code_cells"`
	CellsRun     int    `json:"cells_run"`
	FailedCell   *int   `json:"failed_cell"`
	ErrorName    string `json:"error_name"`
	Error        string `json:"error"`
	Stopped      bool   `json:"stopped"`
	Restarted    bool   `json:"restarted"`
	BytesWritten int64  `json:"bytes_written"`
	Cells        []struct {
		Index          int    `json:"index"`
		ExecutionCount int    `json:"execution_count"`
		Status         string `json:"status"`
		Output         string `json:"output"`
		Figures        int    `json:"figures"`
	} `json:"cells"`
}

// nbFile is the part of a notebook file the tests read back.
type nbFile struct {
	Cells []struct {
		CellType       string           `json:"cell_type"`
		ID             string           `json:"id"`
		ExecutionCount *int             `json:"execution_count"`
		Outputs        []map[string]any `json:"outputs"`
		Metadata       map[string]any   `json:"metadata"`
	} `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NbformatMinor int            `json:"nbformat_minor"`
	Future        map[string]any `json:"x-future-field"`
}

// notebookJSON builds an nbformat 4 notebook: a markdown cell first, then
// one code cell per source.
func notebookJSON(t testing.TB, sources ...string) string {
	t.Helper()
	cells := []any{map[string]any{"cell_type": "markdown", "id": "intro", "metadata": map[string]any{"tags": []string{"keep-me"}}, "source": []string{"# A notebook\n"}}}
	for i, s := range sources {
		cells = append(cells, map[string]any{"cell_type": "code", "id": "c" + string(rune('a'+i)), "execution_count": nil,
			"metadata": map[string]any{"x-cell": i}, "outputs": []any{map[string]any{"output_type": "stream", "name": "stdout", "text": "stale\n"}}, "source": s})
	}
	b, err := json.Marshal(map[string]any{"cells": cells, "nbformat": 4, "nbformat_minor": 5,
		"metadata":       map[string]any{"kernelspec": map[string]any{"language": "python", "name": "python3"}, "x-owner": "test"},
		"x-future-field": map[string]any{"kept": true}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runNotebookAt(t testing.TB, c *client.Client, path string, args map[string]any) (notebookResult, *mcp.CallToolResult, nbFile) {
	t.Helper()
	all := map[string]any{"path": path}
	for k, v := range args {
		all[k] = v
	}
	res := call(t, c, "run_notebook", all)
	var nb nbFile
	if err := json.Unmarshal([]byte(text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": path})))), &nb); err != nil {
		t.Fatalf("the notebook after the run is not JSON: %v", err)
	}
	return structuredAs[notebookResult](t, res), res, nb
}

// TestLocalRunNotebook runs notebooks in the host's python3 through the
// real runner: outputs and execution counts written back, unknown fields
// kept, stop and continue after an error, the size cap, progress.
func TestLocalRunNotebook(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	failing := notebookJSON(t, "x = 6 * 7\nprint('x is', x)\nx", "1 / 0", "print('after')\n'done'")
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "stop.ipynb", "content": failing}))
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "go-on.ipynb", "content": failing}))

	t.Run("stop", func(t *testing.T) {
		r, res, nb := runNotebookAt(t, c, "stop.ipynb", map[string]any{"restart": true})
		if !res.IsError || r.CellsRun != 2 || r.CodeCells != 3 || r.FailedCell == nil || *r.FailedCell != 2 || r.ErrorName != "ZeroDivisionError" || !r.Stopped || !r.Restarted {
			t.Fatalf("isError=%v %+v\n%s", res.IsError, r, text(res))
		}
		if r.Error != "ZeroDivisionError: division by zero" || !strings.Contains(text(res), "cell 2 failed (ZeroDivisionError)") {
			t.Fatalf("error %q, text %q", r.Error, text(res))
		}
		first, failed, unrun := nb.Cells[1], nb.Cells[2], nb.Cells[3]
		if *first.ExecutionCount != 1 || len(first.Outputs) != 2 ||
			first.Outputs[0]["output_type"] != "stream" || first.Outputs[0]["name"] != "stdout" || joinText(first.Outputs[0]["text"]) != "x is 42\n" ||
			first.Outputs[1]["output_type"] != "execute_result" || first.Outputs[1]["execution_count"] != 1.0 || joinText(first.Outputs[1]["data"].(map[string]any)["text/plain"]) != "42" {
			t.Fatalf("first cell: %+v", first)
		}
		if *failed.ExecutionCount != 2 || len(failed.Outputs) != 1 || failed.Outputs[0]["output_type"] != "error" ||
			failed.Outputs[0]["ename"] != "ZeroDivisionError" || failed.Outputs[0]["evalue"] != "division by zero" || len(failed.Outputs[0]["traceback"].([]any)) < 2 {
			t.Fatalf("failed cell: %+v", failed)
		}
		if unrun.ExecutionCount != nil || joinText(unrun.Outputs[0]["text"]) != "stale\n" {
			t.Fatalf("a cell after the failure changed: %+v", unrun)
		}
		if nb.Future["kept"] != true || nb.Metadata["x-owner"] != "test" || nb.NbformatMinor != 5 || nb.Cells[0].ID != "intro" ||
			nb.Cells[0].Metadata["tags"] == nil || first.ID != "ca" || first.Metadata["x-cell"] != 0.0 {
			t.Fatalf("fields run_notebook does not own were lost: %+v", nb)
		}
	})

	t.Run("continue", func(t *testing.T) {
		r, res, nb := runNotebookAt(t, c, "go-on.ipynb", map[string]any{"on_error": "continue", "restart": true})
		if !res.IsError || r.CellsRun != 3 || r.Stopped || *r.FailedCell != 2 || len(r.Cells) != 3 || r.Cells[2].Status != "ok" || r.Cells[2].Output != "after\n'done'" {
			t.Fatalf("isError=%v %+v", res.IsError, r)
		}
		last := nb.Cells[3]
		if *last.ExecutionCount != 3 || len(last.Outputs) != 2 || joinText(last.Outputs[0]["text"]) != "after\n" {
			t.Fatalf("last cell: %+v", last)
		}
	})

	t.Run("state and progress", func(t *testing.T) {
		mustOK(t, "run_code", call(t, c, "run_code", map[string]any{"language": "python", "code": "seed = 5", "stateful": true}))
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "nb/ok.ipynb", "content": notebookJSON(t, "seed * 2", "   ", "import sys; print('warn', file=sys.stderr)")}))
		var mu sync.Mutex
		var steps []string
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "nb-1" {
				mu.Lock()
				steps = append(steps, n.Params.AdditionalFields["message"].(string))
				mu.Unlock()
			}
		})
		req := mcp.CallToolRequest{}
		req.Params.Name = "run_notebook"
		req.Params.Arguments = map[string]any{"path": "nb/ok.ipynb"}
		req.Params.Meta = &mcp.Meta{ProgressToken: "nb-1"}
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		r := structuredAs[notebookResult](t, mustOK(t, "run_notebook", res))
		if r.CellsRun != 2 || r.Cells[0].Output != "10" || r.Cells[1].Index != 3 || r.Cells[1].ExecutionCount != 2 || r.BytesWritten == 0 {
			t.Fatalf("%+v", r)
		}
		mu.Lock()
		defer mu.Unlock()
		// One step per code cell, each certain to arrive before the result;
		// then the summary, which mcp-go's forwarder may drop in a race with
		// the result (see output.settle), so it is checked when it came.
		if len(steps) < 3 || len(steps) > 4 || steps[0] != "cell 1 [1]: ok" || steps[1] != "cell 2: empty" || steps[2] != "cell 3 [2]: ok" ||
			len(steps) == 4 && !strings.HasPrefix(steps[3], "ran 2 of 3 code cells") {
			t.Fatalf("progress messages: %q", steps)
		}
	})

	t.Run("refused", func(t *testing.T) {
		mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": `python3 -c "import json; json.dump({'nbformat': 4, 'cells': [{'cell_type': 'markdown', 'source': 'x' * (11 << 20)}]}, open('big.ipynb', 'w'))"`}))
		for _, tc := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"path": "big.ipynb"}, "up to 10 MiB"},
			{map[string]any{"path": "stop.ipynb", "on_error": "retry"}, "use stop or continue"},
			{map[string]any{"path": "missing.ipynb"}, "missing.ipynb"},
		} {
			res := call(t, c, "run_notebook", tc.args)
			if !res.IsError || !strings.Contains(text(res), tc.want) {
				t.Fatalf("%v: isError=%v %q, want %q", tc.args, res.IsError, text(res), tc.want)
			}
		}
	})
}

// joinText reads an nbformat multiline string.
func joinText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, s := range v {
			b.WriteString(s.(string))
		}
		return b.String()
	}
	return ""
}
