package e2b_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/e2b"
)

// execution is an /execute answer as the SDK's parseOutput collects it.
type execution struct {
	stdout, stderr []string
	results        []map[string]any
	err            map[string]any
	count          int
	ended          bool // end_of_execution came, last
}

// newInterpEnv is newEnv for the code interpreter, which needs
// python3 on the host (the Local provider runs the host's).
func newInterpEnv(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed; the Local provider's interpreter needs it")
	}
	return newEnv(t)
}

// execute runs code as runCode does and parses the answer line by line.
func (e *env) execute(t *testing.T, body map[string]any) execution {
	t.Helper()
	return e.executeWatching(t, body, nil)
}

// executeWatching is execute calling seen with each event as it is read.
func (e *env) executeWatching(t *testing.T, body map[string]any, seen func(msg map[string]any)) execution {
	t.Helper()
	b, _ := json.Marshal(body)
	res := e.do(t, request{method: http.MethodPost, path: "/execute", port: e2b.InterpreterPort, contentType: "application/json", body: strings.NewReader(string(b))})
	if res.StatusCode != http.StatusOK {
		apiError(t, res, http.StatusOK)
	}
	var x execution
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if x.ended {
			t.Fatalf("event %v after end_of_execution", msg)
		}
		if seen != nil {
			seen(msg)
		}
		x.add(t, msg)
	}
	if !x.ended {
		t.Fatalf("the answer did not end with end_of_execution: %+v", x)
	}
	return x
}

// add collects one event, checking the keys the Python SDK reads.
func (x *execution) add(t *testing.T, msg map[string]any) {
	t.Helper()
	switch msg["type"] {
	case "stdout", "stderr":
		stamp, _ := msg["timestamp"].(string)
		if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil {
			t.Fatalf("%v: timestamp is not an ISO 8601 time: %v", msg, err)
		}
		if msg["type"] == "stdout" {
			x.stdout = append(x.stdout, msg["text"].(string))
		} else {
			x.stderr = append(x.stderr, msg["text"].(string))
		}
	case "result":
		x.results = append(x.results, msg)
	case "error":
		x.err = msg
	case "number_of_executions":
		x.count = int(msg["execution_count"].(float64))
	case "end_of_execution":
		x.ended = true
	default:
		t.Fatalf("unknown event %v", msg)
	}
}

func TestExecute(t *testing.T) {
	t.Parallel()
	env := newInterpEnv(t)

	x := env.execute(t, map[string]any{"code": "x = 41\nprint('hi')\nprint('there')"})
	if strings.Join(x.stdout, "|") != "hi\n|there\n" || x.err != nil || len(x.results) != 0 || x.count != 1 {
		t.Fatalf("first cell: %+v", x)
	}
	x = env.execute(t, map[string]any{"code": "x + 1", "language": "python"})
	if len(x.results) != 1 || x.results[0]["text"] != "42" || x.results[0]["is_main_result"] != true || x.count != 2 {
		t.Fatalf("second cell (state kept, main result): %+v", x)
	}
	x = env.execute(t, map[string]any{"code": "1/0", "context_id": "python"})
	if x.err == nil || x.err["name"] != "ZeroDivisionError" || x.err["value"] != "division by zero" ||
		!strings.Contains(x.err["traceback"].(string), "ZeroDivisionError") || x.count != 3 {
		t.Fatalf("failing cell: %+v", x)
	}
}

func TestExecuteEnvVars(t *testing.T) {
	t.Parallel()
	env := newInterpEnv(t)
	env.execute(t, map[string]any{"code": "import os\nos.environ['SG_KEEP'] = 'before'"})
	x := env.execute(t, map[string]any{"code": "print(os.environ['SG_NEW'], os.environ['SG_KEEP'])",
		"env_vars": map[string]string{"SG_NEW": `it's "quoted"` + "\n", "SG_KEEP": "during"}})
	if strings.Join(x.stdout, "") != "it's \"quoted\"\n during\n" || x.err != nil {
		t.Fatalf("cell with env_vars: %+v", x)
	}
	x = env.execute(t, map[string]any{"code": "print(os.environ.get('SG_NEW'), os.environ['SG_KEEP'])"})
	if strings.Join(x.stdout, "") != "None before\n" || x.count != 3 {
		t.Fatalf("after the cell, env_vars are not undone: %+v", x)
	}
}

func TestExecuteRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t) // refused before any cell runs: no python3 needed
	for _, tt := range []struct {
		name   string
		body   string
		token  string
		status int
	}{
		{"another language", `{"code": "1", "language": "javascript"}`, "", http.StatusBadRequest},
		{"unknown context", `{"code": "1", "context_id": "r"}`, "", http.StatusNotFound},
		{"bad env var", `{"code": "1", "env_vars": {"A=B": "c"}}`, "", http.StatusBadRequest},
		{"not JSON", `print(1)`, "", http.StatusBadRequest},
		{"wrong token", `{"code": "1"}`, "nope", http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := env.do(t, request{method: http.MethodPost, path: "/execute", port: e2b.InterpreterPort, token: tt.token, body: strings.NewReader(tt.body)})
			apiError(t, res, tt.status)
		})
	}
	if ops := env.runner.recorded(); len(ops) != 0 {
		t.Fatalf("refused requests reached the runner: %+v", ops)
	}
}

func TestContexts(t *testing.T) {
	t.Parallel()
	env := newInterpEnv(t)
	// The SDK sends no X-Access-Token on /contexts.
	ctxReq := func(method, path, body string) request {
		return request{method: method, path: path, port: e2b.InterpreterPort, token: "-", contentType: "application/json", body: strings.NewReader(body)}
	}
	decode := func(res *http.Response, v any) {
		t.Helper()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s", res.Status)
		}
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}

	var created map[string]any
	decode(env.do(t, ctxReq(http.MethodPost, "/contexts", `{"language": "python"}`)), &created)
	if created["id"] != "python" || created["language"] != "python" {
		t.Fatalf("created %v", created)
	}
	var list []map[string]any
	decode(env.do(t, ctxReq(http.MethodGet, "/contexts", "")), &list)
	if len(list) != 1 || list[0]["id"] != "python" {
		t.Fatalf("listed %v", list)
	}
	apiError(t, env.do(t, ctxReq(http.MethodPost, "/contexts", `{"language": "r"}`)), http.StatusBadRequest)
	apiError(t, env.do(t, ctxReq(http.MethodPost, "/contexts", `{"language": "python", "cwd": "/tmp"}`)), http.StatusBadRequest)

	env.execute(t, map[string]any{"code": "y = 1"})
	if res := env.do(t, ctxReq(http.MethodDelete, "/contexts/python", "")); res.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %s", res.Status)
	}
	if x := env.execute(t, map[string]any{"code": "y"}); len(x.results) != 1 || x.count != 2 {
		t.Fatalf("removing the context wiped the shared interpreter: %+v", x)
	}

	apiError(t, env.do(t, ctxReq(http.MethodPost, "/contexts/python/restart", "")), http.StatusNotFound) // no token at all
	restart := ctxReq(http.MethodPost, "/contexts/python/restart", "")
	restart.header = map[string]string{"E2B-Traffic-Access-Token": testToken}
	if res := env.do(t, restart); res.StatusCode != http.StatusNoContent {
		t.Fatalf("restart: %s", res.Status)
	}
	if x := env.execute(t, map[string]any{"code": "y"}); x.err == nil || x.err["name"] != "NameError" || x.count != 1 {
		t.Fatalf("after a restart, state or count survived: %+v", x)
	}
}

// TestExecuteStreams: a cell's output reaches the client while the cell
// runs. The cell prints, then waits (up to 30 s, within the cell timeout) for a file in its
// workspace that the test writes only once it has read the first line,
// then prints again; answered at the end instead, the first line would
// come after the cell gave up.
func TestExecuteStreams(t *testing.T) {
	t.Parallel()
	env := newInterpEnv(t)
	code := "import os, sys, time\nprint('first')\nprint('warn', file=sys.stderr)\n" +
		"for _ in range(300):\n    if os.path.exists('gate'):\n        break\n    time.sleep(0.1)\nelse:\n    print('gave up')\n" +
		"print('second')\n'done'"
	var order []string
	x := env.executeWatching(t, map[string]any{"code": code}, func(msg map[string]any) {
		order = append(order, fmt.Sprint(msg["type"]))
		if msg["type"] == "stdout" && msg["text"] == "first\n" {
			if err := os.WriteFile(filepath.Join(env.workspace, "gate"), nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	})
	if strings.Join(x.stdout, "|") != "first\n|second\n" || strings.Join(x.stderr, "|") != "warn\n" {
		t.Fatalf("stdout %q, stderr %q: want the first line while the cell waited for it", x.stdout, x.stderr)
	}
	if len(x.results) != 1 || x.results[0]["text"] != "done" || x.count != 1 {
		t.Fatalf("after the output: %+v", x)
	}
	if tail := strings.Join(order[len(order)-3:], " "); tail != "result number_of_executions end_of_execution" {
		t.Fatalf("events in order %v: want the output first and end_of_execution last", order)
	}
}

// TestExecuteLostRunner: when the runner connection is lost after output
// went out, the answer (already 200) ends as E2B's interpreter ends a
// lost cell: an UnexpectedEndOfExecution error, then end_of_execution.
func TestExecuteLostRunner(t *testing.T) {
	t.Parallel()
	env := newInterpEnv(t)
	code := "import time\nprint('first')\ntime.sleep(30)\nprint('never')"
	x := env.executeWatching(t, map[string]any{"code": code}, func(msg map[string]any) {
		if msg["type"] == "stdout" {
			env.runner.c.Close()
		}
	})
	if strings.Join(x.stdout, "") != "first\n" || x.err == nil || x.err["name"] != "UnexpectedEndOfExecution" || x.err["value"] == "" {
		t.Fatalf("after the runner connection was lost: %+v", x)
	}
}
