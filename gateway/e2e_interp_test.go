package gateway_test

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
)

// interpResult mirrors the documented structuredContent of run_code with
// stateful.
type interpResult struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Result     string `json:"result"`
	HasResult  bool   `json:"has_result"`
	Error      string `json:"error"`
	ErrorName  string `json:"error_name"`
	Figures    int    `json:"figures"`
	TimedOut   bool   `json:"timed_out"`
	Restarted  bool   `json:"restarted"`
	DurationMs int64  `json:"duration_ms"`
	Message    string `json:"message"`
}

// cell runs code in the sandbox's stateful interpreter.
func cell(t *testing.T, c *client.Client, code string, extra map[string]any) (interpResult, *mcp.CallToolResult) {
	t.Helper()
	args := map[string]any{"language": "python", "code": code, "stateful": true}
	for k, v := range extra {
		args[k] = v
	}
	res := call(t, c, "run_code", args)
	return structuredAs[interpResult](t, res), res
}

// TestStatefulInterpreter drives run_code with stateful and
// interpreter_restart through a real MCP client, the gateway and a real
// container (the default 512 MiB).
func TestStatefulInterpreter(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)

	t.Run("state persists", func(t *testing.T) {
		if r, res := cell(t, c, "x = 41", nil); res.IsError || r.HasResult {
			t.Fatalf("x = 41: isError=%v %+v", res.IsError, r)
		}
		r, res := cell(t, c, "print('adding')\nx + 1", nil)
		if res.IsError || r.Result != "42" || !r.HasResult || r.Stdout != "adding\n" || text(res) != "adding\n42" {
			t.Fatalf("x + 1: isError=%v %+v, text %q", res.IsError, r, text(res))
		}
	})

	t.Run("matplotlib figure", func(t *testing.T) {
		r, res := cell(t, c, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()", nil)
		if res.IsError || r.Figures != 1 || r.Stderr != "" {
			t.Fatalf("plot: isError=%v %+v", res.IsError, r)
		}
		var images []mcp.ImageContent
		for _, ct := range res.Content {
			if img, ok := ct.(mcp.ImageContent); ok {
				images = append(images, img)
			}
		}
		if len(images) != 1 || images[0].MIMEType != "image/png" {
			t.Fatalf("content: %+v", res.Content)
		}
		b, err := base64.StdEncoding.DecodeString(images[0].Data)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("decode the figure: %v", err)
		}
		if size := img.Bounds().Size(); size.X < 100 || size.Y < 100 {
			t.Fatalf("figure of %v", size)
		}
		if r, _ := cell(t, c, "len(plt.get_fignums())", nil); r.Result != "0" || r.Figures != 0 {
			t.Fatalf("the figure was left open: %+v", r)
		}
	})

	t.Run("timeout interrupts and keeps state", func(t *testing.T) {
		r, res := cell(t, c, "while True:\n    pass", map[string]any{"timeout": 1})
		if !res.IsError || !r.TimedOut || r.ErrorName != "KeyboardInterrupt" || r.Restarted || !strings.Contains(text(res), "KeyboardInterrupt") {
			t.Fatalf("timed-out cell: isError=%v %+v", res.IsError, r)
		}
		if r, _ := cell(t, c, "x", nil); r.Result != "41" {
			t.Fatalf("x after the interrupt: %+v", r)
		}
	})

	t.Run("a cell that ignores the interrupt is killed with what it started", func(t *testing.T) {
		// system() ignores SIGINT while it waits for its child.
		r, res := cell(t, c, "import os\nos.system('sleep 1234')", map[string]any{"timeout": 1})
		if !res.IsError || !r.TimedOut || !r.Restarted || !strings.Contains(r.Message, "earlier state is gone") {
			t.Fatalf("stuck cell: isError=%v %+v", res.IsError, r)
		}
		if r, _ := cell(t, c, "x", nil); r.ErrorName != "NameError" || r.Restarted {
			t.Fatalf("x after the kill: %+v", r)
		}
		// The killed children are the runner's orphans now; its reaper
		// reaps them after its grace.
		waitFor(t, 30*time.Second, "no sleep and no zombie left", func() bool {
			r, _ := shell(t, c, "ps -eo stat,args --no-headers", nil)
			return !strings.Contains(r.Stdout, "sleep 1234") && !strings.Contains(r.Stdout, "\nZ") && !strings.HasPrefix(r.Stdout, "Z")
		})
		cell(t, c, "x = 41", nil)
	})

	t.Run("restart clears state", func(t *testing.T) {
		res := mustOK(t, "interpreter_restart", call(t, c, "interpreter_restart", nil))
		if r := structuredAs[interpResult](t, res); !r.Restarted {
			t.Fatalf("interpreter_restart: %+v", r)
		}
		r, res := cell(t, c, "x", nil)
		if !res.IsError || r.ErrorName != "NameError" || !strings.Contains(r.Error, "name 'x' is not defined") {
			t.Fatalf("x after restart: isError=%v %+v", res.IsError, r)
		}
	})

	t.Run("out of memory", func(t *testing.T) {
		cell(t, c, "y = 1", nil)
		r, res := cell(t, c, "b = b'x' * (600 << 20)", nil)
		if !res.IsError || r.ErrorName != "InterpreterDied" || !strings.Contains(r.Error, "out of memory (limit 512 MiB)") {
			t.Fatalf("memory bomb: isError=%v %+v", res.IsError, r)
		}
		r, res = cell(t, c, "y", nil)
		want := "the interpreter died (killed: out of memory (limit 512 MiB)); a new one was started and earlier state is gone"
		if !res.IsError || !r.Restarted || r.ErrorName != "NameError" || !strings.Contains(r.Message, want) {
			t.Fatalf("after the OOM: isError=%v %+v", res.IsError, r)
		}
		// The sandbox and the new interpreter work.
		if r, _ := cell(t, c, "y = 2\ny", nil); r.Result != "2" {
			t.Fatalf("after the OOM: %+v", r)
		}
	})

	t.Run("audit", func(t *testing.T) {
		outcomes := map[string]int{}
		for _, e := range auditRecords(t, tg.AuditPath) {
			if e.Tool != "run_code" || e.Kind != audit.KindToolEnd {
				continue
			}
			outcomes[e.Outcome]++
			if strings.Contains(e.Error, "Traceback") || strings.Contains(e.Error, "adding") {
				t.Errorf("audit record holds output or a traceback: %q", e.Error)
			}
			if e.Outcome == "timeout" && !strings.HasPrefix(e.Error, "KeyboardInterrupt: timed out after 1s") && !strings.Contains(e.Error, "killed") {
				t.Errorf("timeout record: %q", e.Error)
			}
		}
		if outcomes["ok"] == 0 || outcomes["error"] == 0 || outcomes["timeout"] != 2 {
			t.Errorf("run_code outcomes in the audit log: %v", outcomes)
		}
	})

	t.Run("arguments", func(t *testing.T) {
		for _, args := range []map[string]any{
			{"language": "node", "code": "1", "stateful": true},
			{"language": "python", "code": "1", "stateful": true, "env": map[string]any{"A": "b"}},
			{"language": "python", "code": "1", "stateful": true, "cwd": "/tmp"},
		} {
			if res := call(t, c, "run_code", args); !res.IsError {
				t.Errorf("%v: not refused: %s", args, text(res))
			}
		}
		if res := call(t, c, "interpreter_restart", map[string]any{"language": "node"}); !res.IsError {
			t.Errorf("interpreter_restart node: %s", text(res))
		}
	})
}

// TestStatefulInterpretersAreIsolated checks that two sessions never share
// an interpreter.
func TestStatefulInterpretersAreIsolated(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	a, b := legacyClient(t, tg.URL), legacyClient(t, tg.URL)
	if r, res := cell(t, a, "secret = 'only a'", nil); res.IsError {
		t.Fatalf("a: %+v", r)
	}
	if r, res := cell(t, b, "secret", nil); !res.IsError || r.ErrorName != "NameError" {
		t.Fatalf("b sees a's state: %+v", r)
	}
	if r, _ := cell(t, a, "secret", nil); r.Result != "'only a'" {
		t.Fatalf("a lost its state: %+v", r)
	}
}
