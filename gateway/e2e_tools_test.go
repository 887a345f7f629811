package gateway_test

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// TestToolsEndToEnd drives every file, exec, code, process and sandbox tool
// through a real MCP client, the HTTP endpoint and a real container.
func TestToolsEndToEnd(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	toolBattery(t, legacyClient(t, tg.URL))
}

// toolBattery runs the core tools through c against the sandbox of its
// session: files, shell, code, background processes, sandbox_info. Every
// provider's gateway passes it (TestToolsEndToEnd, and the Kubernetes
// tier's on runc and gVisor pods).
func toolBattery(t *testing.T, c *client.Client) {
	t.Run("files", func(t *testing.T) {
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "src/hello.txt", "content": "one\ntwo\nthree\n"}))
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "/workspace/src/hello.txt"}))); got != "one\ntwo\nthree\n" {
			t.Fatalf("read_file = %q", got)
		}
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "src/hello.txt", "start_line": 2, "end_line": 2}))); got != "two\n" {
			t.Fatalf("read_file lines 2..2 = %q", got)
		}
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "src/hello.txt", "offset": 4, "limit": 3}))); got != "two" {
			t.Fatalf("read_file offset 4 limit 3 = %q", got)
		}
		bin := base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff})
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "bin.dat", "content": bin, "encoding": "base64", "mode": "0600"}))
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "bin.dat", "encoding": "base64"}))); got != bin {
			t.Fatalf("binary round trip = %q, want %q", got, bin)
		}
		// Megabytes travel between gateway and runner as payloads beside
		// the JSON: random bytes, and text full of what JSON escapes.
		big := make([]byte, 5<<20)
		rand.Read(big)
		bigB64 := base64.StdEncoding.EncodeToString(big)
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "big.bin", "content": bigB64, "encoding": "base64"}))
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "big.bin"}))); got != bigB64 {
			t.Fatalf("5 MiB binary round trip differs (%d chars back, %d sent)", len(got), len(bigB64))
		}
		bigText := strings.Repeat("line \"quoted\" \\ tab\t ünïcödé <&> \u2028\n", 40000)
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "big.txt", "content": bigText}))
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "big.txt"}))); got != bigText {
			t.Fatalf("%d-byte text round trip differs (%d bytes back)", len(bigText), len(got))
		}
		info := structuredAs[map[string]any](t, mustOK(t, "file_info", call(t, c, "file_info", map[string]any{"path": "bin.dat"})))
		if info["size"].(float64) != 4 || info["mode"] != "-rw-------" {
			t.Fatalf("file_info = %v", info)
		}

		mustOK(t, "edit_file", call(t, c, "edit_file", map[string]any{"path": "src/hello.txt", "old_string": "two", "new_string": "TWO"}))
		mustOK(t, "edit_file", call(t, c, "edit_file", map[string]any{"path": "src/hello.txt", "insert_line": 1, "text": "zero"}))
		mustOK(t, "edit_file", call(t, c, "edit_file", map[string]any{"path": "src/hello.txt", "start_line": 4, "end_line": 4}))
		if got := text(call(t, c, "read_file", map[string]any{"path": "src/hello.txt"})); got != "zero\none\nTWO\n" {
			t.Fatalf("after edits = %q", got)
		}
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "dup.txt", "content": "a a"}))
		res := call(t, c, "edit_file", map[string]any{"path": "dup.txt", "old_string": "a", "new_string": "b"})
		if !res.IsError || !strings.Contains(text(res), "replace_all") {
			t.Fatalf("ambiguous edit: isError=%v %q", res.IsError, text(res))
		}
		mustOK(t, "edit_file", call(t, c, "edit_file", map[string]any{"path": "dup.txt", "old_string": "a", "new_string": "b", "replace_all": true}))

		list := text(mustOK(t, "list_directory", call(t, c, "list_directory", map[string]any{"path": "/workspace", "depth": 2})))
		for _, want := range []string{"/workspace/src/", "/workspace/src/hello.txt", "/workspace/bin.dat"} {
			if !strings.Contains(list, want) {
				t.Fatalf("list_directory lacks %s:\n%s", want, list)
			}
		}
		found := text(mustOK(t, "search_files", call(t, c, "search_files", map[string]any{"pattern": "T.O", "glob": "*.txt"})))
		if !strings.Contains(found, "/workspace/src/hello.txt:3:TWO") {
			t.Fatalf("search_files = %q", found)
		}
		mustOK(t, "make_directory", call(t, c, "make_directory", map[string]any{"path": "a/b/c"}))
		mustOK(t, "move_path", call(t, c, "move_path", map[string]any{"from": "dup.txt", "to": "a/b/c/moved.txt"}))
		if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "a/b/c/moved.txt"}))); got != "b b" {
			t.Fatalf("moved file = %q", got)
		}
		res = call(t, c, "remove_path", map[string]any{"path": "a"})
		if !res.IsError || !strings.Contains(text(res), "recursive") {
			t.Fatalf("removing a non-empty dir without recursive: %q", text(res))
		}
		mustOK(t, "remove_path", call(t, c, "remove_path", map[string]any{"path": "a", "recursive": true}))
		if res := call(t, c, "file_info", map[string]any{"path": "a"}); !res.IsError {
			t.Fatalf("a survived remove_path: %q", text(res))
		}
		res = call(t, c, "remove_path", map[string]any{"path": "/workspace", "recursive": true})
		if !res.IsError {
			t.Fatal("remove_path removed the workspace root")
		}

		res = call(t, c, "read_file", map[string]any{"path": "missing.txt"})
		if !res.IsError || !strings.Contains(text(res), "missing.txt") {
			t.Fatalf("missing file: isError=%v %q", res.IsError, text(res))
		}
	})

	t.Run("shell", func(t *testing.T) {
		r, res := shell(t, c, "echo out; echo err >&2; id -u; pwd; cat; echo $GREETING", map[string]any{"stdin": "from stdin\n", "env": map[string]any{"GREETING": "hi"}})
		mustOK(t, "run_shell", res)
		if r.Stdout != "out\n1000\n/workspace\nfrom stdin\nhi\n" || r.Stderr != "err\n" || r.ExitCode != 0 {
			t.Fatalf("run_shell = %+v", r)
		}
		r, res = shell(t, c, "exit 3", nil)
		if !res.IsError || r.ExitCode != 3 {
			t.Fatalf("exit 3: isError=%v %+v", res.IsError, r)
		}
		r, _ = shell(t, c, "pwd", map[string]any{"cwd": "/tmp"})
		if r.Stdout != "/tmp\n" {
			t.Fatalf("cwd /tmp: %+v", r)
		}
	})

	t.Run("code", func(t *testing.T) {
		for lang, code := range map[string]string{
			"python": "import sys\nprint(sum(range(10)))\n",
			"node":   "console.log([1,2,3].reduce((a,b)=>a+b)*5+15)",
			"bash":   "echo $((40 + 5))",
		} {
			r := structuredAs[execResult](t, mustOK(t, "run_code "+lang, call(t, c, "run_code", map[string]any{"language": lang, "code": code})))
			if r.Stdout != "45\n" {
				t.Errorf("run_code %s stdout = %q, stderr %q", lang, r.Stdout, r.Stderr)
			}
		}
		res := call(t, c, "run_code", map[string]any{"language": "python", "code": "raise SystemExit('boom')"})
		if r := structuredAs[execResult](t, res); !res.IsError || r.ExitCode != 1 || !strings.Contains(r.Stderr, "boom") {
			t.Fatalf("failing python: isError=%v %+v", res.IsError, r)
		}
		res = call(t, c, "run_code", map[string]any{"language": "cobol", "code": "x"})
		if !res.IsError || !strings.Contains(text(res), "python") {
			t.Fatalf("unknown language: %q", text(res))
		}
		// The gateway accepts the aliases the runner does (one list).
		if r := structuredAs[execResult](t, mustOK(t, "run_code js", call(t, c, "run_code", map[string]any{"language": "js", "code": "console.log(6*7)"}))); r.Stdout != "42\n" {
			t.Fatalf("run_code js: %+v", r)
		}
	})

	t.Run("background", func(t *testing.T) {
		r, res := shell(t, c, "read line; echo got $line; echo bye >&2; sleep 600", map[string]any{"background": true})
		mustOK(t, "run_shell background", res)
		if r.ProcessID == "" {
			t.Fatalf("no process_id: %+v", r)
		}
		list := text(mustOK(t, "process_list", call(t, c, "process_list", nil)))
		if !strings.Contains(list, r.ProcessID) || !strings.Contains(list, "running") {
			t.Fatalf("process_list = %q", list)
		}
		mustOK(t, "process_input", call(t, c, "process_input", map[string]any{"process_id": r.ProcessID, "data": "hello\n"}))
		var next float64
		waitFor(t, 10*time.Second, "background output", func() bool {
			out := structuredAs[map[string]any](t, mustOK(t, "process_output", call(t, c, "process_output", map[string]any{"process_id": r.ProcessID})))
			next, _ = out["next_offset"].(float64)
			return out["stdout"] == "got hello\n" && out["stderr"] == "bye\n"
		})
		more := structuredAs[map[string]any](t, mustOK(t, "process_output", call(t, c, "process_output", map[string]any{"process_id": r.ProcessID, "offset": next})))
		if more["stdout"] != "" || more["stderr"] != "" {
			t.Fatalf("reading from next_offset returned old output: %v", more)
		}
		res = call(t, c, "process_kill", map[string]any{"process_id": r.ProcessID, "signal": "SIGKILL"})
		mustOK(t, "process_kill", res)
		out := structuredAs[map[string]any](t, mustOK(t, "process_output", call(t, c, "process_output", map[string]any{"process_id": r.ProcessID})))
		proc := out["process"].(map[string]any)
		if proc["running"] == true || proc["signal"] != "SIGKILL" {
			t.Fatalf("after kill: %v", out)
		}
		res = call(t, c, "process_output", map[string]any{"process_id": "p-nope"})
		if !res.IsError {
			t.Fatalf("unknown process should be an error: %q", text(res))
		}
	})

	t.Run("sandbox_info", func(t *testing.T) {
		info := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))
		network, _ := info["network"].(map[string]any)
		if info["sandbox_id"] == "" || network == nil || len(network["allow"].([]any)) != 0 || network["proxy"] != "http://127.0.0.1:3128" {
			t.Fatalf("sandbox_info = %v", info)
		}
	})
}

// TestSessionlessSandbox is the 2026-07-28 flow: no session, so a call
// without sandbox_id uses the client's default sandbox, and a client that
// wants another creates it and passes its id.
func TestSessionlessSandbox(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	noteID(t, mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"})), createdDefault)
	created := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))
	id, _ := created["sandbox_id"].(string)
	if len(id) < 32 {
		t.Fatalf("sandbox id %q is shorter than 128 bits of hex", id)
	}
	r, res := shell(t, c, "echo hi > f; cat f", map[string]any{"sandbox_id": id})
	mustOK(t, "run_shell", res)
	if r.Stdout != "hi\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
	if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "f", "sandbox_id": id}))); got != "hi\n" {
		t.Fatalf("read_file = %q", got)
	}
	res = call(t, c, "run_shell", map[string]any{"command": "true", "sandbox_id": "0123456789abcdef0123456789abcdef"})
	if !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("unknown sandbox_id: %q", text(res))
	}
	res = call(t, c, "sandbox_create", map[string]any{"image": "debian:latest"})
	if !res.IsError || !strings.Contains(text(res), "not allowed") {
		t.Fatalf("image outside the allowlist: %q", text(res))
	}
	if n := len(tg.containers(t)); n != 2 {
		t.Fatalf("%d containers, want 2 (the default and the created one)", n)
	}
	mustOK(t, "sandbox_destroy", call(t, c, "sandbox_destroy", map[string]any{"sandbox_id": id}))
	if n := len(tg.containers(t)); n != 1 {
		t.Fatalf("%d containers after sandbox_destroy, want 1 (the default)", n)
	}
	res = call(t, c, "run_shell", map[string]any{"command": "true", "sandbox_id": id})
	if !res.IsError {
		t.Fatalf("destroyed sandbox still answers: %q", text(res))
	}
}
