package gateway_test

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/runner/protocol"
)

// The speed goals of the core issue, measured end to end: an MCP client
// on loopback, the gateway, the runner connection, a real container.
// `make bench` runs these; the README reports the numbers.

func BenchmarkRunShellEcho(b *testing.B) {
	c := benchSession(b)
	b.ResetTimer()
	for b.Loop() {
		res, err := callErr(b.Context(), c, "run_shell", map[string]any{"command": "echo hi"})
		if err != nil || res.IsError || !strings.HasPrefix(text(res), "hi\n") {
			b.Fatalf("run_shell echo: %v %v", err, res)
		}
	}
}

func BenchmarkReadFile1KiB(b *testing.B) {
	c := benchSession(b)
	content := strings.Repeat("x", 1023) + "\n"
	if res, err := callErr(b.Context(), c, "write_file", map[string]any{"path": "kib.txt", "content": content}); err != nil || res.IsError {
		b.Fatalf("write_file: %v", err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := callErr(b.Context(), c, "read_file", map[string]any{"path": "kib.txt"})
		if err != nil || res.IsError || len(text(res)) != 1024 {
			b.Fatalf("read_file: %v", err)
		}
	}
}

func BenchmarkReadFile1MiB(b *testing.B) {
	c := benchSession(b)
	content := strings.Repeat(strings.Repeat("x", 1023)+"\n", 1024)
	if res, err := callErr(b.Context(), c, "write_file", map[string]any{"path": "mib.txt", "content": content}); err != nil || res.IsError {
		b.Fatalf("write_file: %v", err)
	}
	b.SetBytes(int64(len(content)))
	b.ResetTimer()
	for b.Loop() {
		res, err := callErr(b.Context(), c, "read_file", map[string]any{"path": "mib.txt"})
		if err != nil || res.IsError || len(text(res)) != len(content) {
			b.Fatalf("read_file: %v", err)
		}
	}
}

func BenchmarkWriteFile8MiB(b *testing.B) {
	c := benchSession(b)
	content := strings.Repeat(strings.Repeat("y", 1023)+"\n", 8<<10)
	b.SetBytes(int64(len(content)))
	b.ResetTimer()
	for b.Loop() {
		res, err := callErr(b.Context(), c, "write_file", map[string]any{"path": "8mib.txt", "content": content})
		if err != nil || res.IsError {
			b.Fatalf("write_file: %v %v", err, res)
		}
	}
}

// BenchmarkEchoStages splits a run_shell echo into where its time goes,
// one sub-benchmark per layer, all against the same sandbox:
//
//	mcp          the whole call: HTTP, auth, MCP, audit records, runner, sh
//	runner-exec  the runner request alone (gateway's websocket, the
//	             runner's spawn, sh, the tree's sweep, the result)
//	runner-info  a runner round trip that starts no process
//	sh-in-sandbox one fork+exec of sh inside the sandbox, timed by sh
//	             itself over 20 runs (no runner bookkeeping)
//
// mcp - runner-exec is the gateway's share; runner-exec - runner-info the
// process's; sh-in-sandbox the part the kernel charges for fork+exec.
func BenchmarkEchoStages(b *testing.B) {
	tg := startGateway(b, nil)
	c := legacyClient(b, tg.URL)
	mustOK(b, "warm up", call(b, c, "run_shell", map[string]any{"command": "true"}))
	info := structuredAs[map[string]any](b, mustOK(b, "sandbox_info", call(b, c, "sandbox_info", nil)))
	sb, err := tg.Provider.Get(b.Context(), info["sandbox_id"].(string))
	if err != nil {
		b.Fatal(err)
	}
	rc, err := protocol.Dial(b.Context(), func(ctx context.Context) (net.Conn, error) { return sb.Dial(ctx) })
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	b.Run("mcp", func(b *testing.B) {
		for b.Loop() {
			if res, err := callErr(b.Context(), c, "run_shell", map[string]any{"command": "echo hi"}); err != nil || res.IsError {
				b.Fatalf("run_shell: %v %v", err, res)
			}
		}
	})
	b.Run("runner-exec", func(b *testing.B) {
		for b.Loop() {
			if _, err := rc.Stream(b.Context(), protocol.OpExec, protocol.ExecRequest{Command: "echo hi"}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runner-info", func(b *testing.B) {
		for b.Loop() {
			if err := rc.Call(b.Context(), protocol.OpInfo, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sh-in-sandbox", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			// sh reports the loop's own duration; the call around it is
			// not counted.
			r, _ := shell(b, c, `s=$(date +%s%N); for i in $(seq 20); do sh -c 'echo hi' >/dev/null; done; echo $(( ($(date +%s%N) - s) / 20 ))`, nil)
			ns := strings.TrimSpace(r.Stdout)
			b.StartTimer()
			d, err := time.ParseDuration(ns + "ns")
			if err != nil {
				b.Fatalf("sh loop said %q", ns)
			}
			b.ReportMetric(float64(d.Microseconds())/1000, "ms/fork+exec")
		}
	})
}

// BenchmarkDockerExecEcho is the baseline a hand-rolled `docker exec`
// gateway pays per call, against the same kind of container.
func BenchmarkDockerExecEcho(b *testing.B) {
	c := benchSession(b)
	info := structuredAs[map[string]any](b, mustOK(b, "sandbox_info", call(b, c, "sandbox_info", nil)))
	cid := info["container_id"].(string)
	b.ResetTimer()
	for b.Loop() {
		out, err := exec.Command("docker", "exec", cid, "echo", "hi").CombinedOutput()
		if err != nil || string(out) != "hi\n" {
			b.Fatalf("docker exec: %v %s", err, out)
		}
	}
}

// BenchmarkSessionFirstCall is a new session's first tool call: it pays
// for creating and starting the container.
func BenchmarkSessionFirstCall(b *testing.B) {
	tg := startGateway(b, nil)
	for b.Loop() {
		b.StopTimer()
		c := legacyClient(b, tg.URL)
		b.StartTimer()
		res, err := callErr(b.Context(), c, "run_shell", map[string]any{"command": "true"})
		if err != nil || res.IsError {
			b.Fatalf("first call: %v", err)
		}
		b.StopTimer()
		deleteSession(b, tg.URL, c.GetSessionId())
		c.Close()
		b.StartTimer()
	}
}

// benchSession starts a gateway and a session whose sandbox already exists.
func benchSession(b *testing.B, mutate ...func(*gateway.Config)) *client.Client {
	var m func(*gateway.Config)
	if len(mutate) > 0 {
		m = mutate[0]
	}
	tg := startGateway(b, m)
	c := legacyClient(b, tg.URL)
	mustOK(b, "warm up", call(b, c, "run_shell", map[string]any{"command": "true"}))
	return c
}

// BenchmarkResumeFirstCall measures a call to a paused sandbox: the
// resume (the container started again on its workspace, its runner
// dialled) and the call's own work, a 1 KiB read_file. The pause before
// each call is not timed.
func BenchmarkResumeFirstCall(b *testing.B) {
	c := benchSession(b)
	content := strings.Repeat("x", 1023) + "\n"
	if res, err := callErr(b.Context(), c, "write_file", map[string]any{"path": "kib.txt", "content": content}); err != nil || res.IsError {
		b.Fatalf("write_file: %v", err)
	}
	for b.Loop() {
		b.StopTimer()
		if res, err := callErr(b.Context(), c, "sandbox_pause", nil); err != nil || res.IsError {
			b.Fatalf("sandbox_pause: %v %s", err, text(res))
		}
		b.StartTimer()
		res, err := callErr(b.Context(), c, "read_file", map[string]any{"path": "kib.txt"})
		if err != nil || res.IsError || len(text(res)) != 1024 || res.Meta == nil || res.Meta.GetMetaField("sandgate.dev/sandbox-resumed") == nil {
			b.Fatalf("read_file after the pause: %v", err)
		}
	}
}

// benchGiB makes a session sandbox holding 1 GiB of random files (sixteen
// 64 MiB files).
func benchGiB(b *testing.B, mutate ...func(*gateway.Config)) *client.Client {
	c := benchSession(b, mutate...)
	if res, err := callErr(b.Context(), c, "run_shell", map[string]any{"command": "for i in $(seq 16); do head -c 64M /dev/urandom > f$i.bin; done", "timeout": 300}); err != nil || res.IsError {
		b.Fatalf("write 1 GiB: %v %s", err, text(res))
	}
	return c
}

// BenchmarkPause measures sandbox_pause of a sandbox holding 1 GiB of
// files (the resume before each is not timed).
func BenchmarkPause(b *testing.B) {
	c := benchGiB(b)
	for b.Loop() {
		if res, err := callErr(b.Context(), c, "sandbox_pause", nil); err != nil || res.IsError {
			b.Fatalf("sandbox_pause: %v %s", err, text(res))
		}
		b.StopTimer()
		if res, err := callErr(b.Context(), c, "sandbox_resume", nil); err != nil || res.IsError {
			b.Fatalf("sandbox_resume: %v %s", err, text(res))
		}
		b.StartTimer()
	}
}

// BenchmarkSnapshot measures sandbox_snapshot of a running sandbox
// holding 1 GiB of files (the delete after each is not timed).
func BenchmarkSnapshot(b *testing.B) {
	c := benchGiB(b)
	for b.Loop() {
		res, err := callErr(b.Context(), c, "sandbox_snapshot", nil)
		if err != nil || res.IsError {
			b.Fatalf("sandbox_snapshot: %v %s", err, text(res))
		}
		b.StopTimer()
		id := structuredAs[map[string]any](b, res)["snapshot_id"]
		if res, err := callErr(b.Context(), c, "snapshot_delete", map[string]any{"snapshot_id": id}); err != nil || res.IsError {
			b.Fatalf("snapshot_delete: %v %s", err, text(res))
		}
		b.StartTimer()
	}
}

// BenchmarkFork10 measures sandbox_fork {count: 10} of a sandbox holding
// 1 GiB of files: a snapshot and ten sandboxes made from it (their
// removal after each is not timed). The tenant's live quota is raised
// from the shipped 10 to 11: the source counts too.
func BenchmarkFork10(b *testing.B) {
	c := benchGiB(b, func(c *gateway.Config) { c.MaxSandboxesPerTenant = 11 })
	for b.Loop() {
		res, err := callErr(b.Context(), c, "sandbox_fork", map[string]any{"count": 10})
		if err != nil || res.IsError {
			b.Fatalf("sandbox_fork: %v %s", err, text(res))
		}
		b.StopTimer()
		for _, f := range structuredAs[map[string]any](b, res)["forks"].([]any) {
			id, _ := f.(map[string]any)["sandbox_id"].(string)
			if id == "" {
				b.Fatalf("a fork failed: %v", f)
			}
			if res, err := callErr(b.Context(), c, "sandbox_destroy", map[string]any{"sandbox_id": id}); err != nil || res.IsError {
				b.Fatalf("sandbox_destroy: %v %s", err, text(res))
			}
		}
		b.StartTimer()
	}
}
