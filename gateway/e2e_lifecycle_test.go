package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestIdleSessionPauses: with the shipped --on-idle pause, the sweep
// pauses a legacy session's sandbox unused for the idle TTL and keeps the
// session; the session's next call resumes the sandbox with its files.
func TestIdleSessionPauses(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "kept.txt", "content": "kept"}))
	tg.gw.Sweep(time.Now().Add(sandbox.DefaultLimits.IdleTTL + time.Minute))
	if left := tg.listed(t); len(left) != 1 || left[0].State != sandbox.StatePaused {
		t.Fatalf("after the idle TTL: %+v, want the session's sandbox paused", left)
	}
	res := mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "kept.txt"}))
	if text(res) != "kept" || !strings.Contains(allText(res), "was paused") {
		t.Fatalf("the session's next call: %q; want its file and a note that its sandbox was resumed", allText(res))
	}
}

// TestIdleSessionIsEnded: with --on-idle destroy, a session unused for
// the idle TTL loses its container and its id stops working.
func TestIdleSessionIsEnded(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.OnIdle = "destroy" })
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	tg.gw.Sweep(time.Now().Add(sandbox.DefaultLimits.IdleTTL + time.Minute))
	if n := len(tg.containers(t)); n != 0 {
		t.Fatalf("%d containers after the idle TTL, want 0", n)
	}
	if _, err := callErr(t.Context(), c, "run_shell", map[string]any{"command": "true"}); err == nil {
		t.Fatal("an idle-ended session still accepts calls")
	}
}

// TestMaxLifetime: a sandbox at its maximum lifetime is paused even with
// a call in flight (the shipped --on-idle pause), with its files; the
// next call starts a new run with a whole lifetime. With --on-idle
// destroy it is removed.
func TestMaxLifetime(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "kept.txt", "content": "kept", "sandbox_id": id}))
	busy := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := callErr(t.Context(), c, "run_shell", map[string]any{"command": "sleep 30", "sandbox_id": id})
		busy <- res
	}()
	waitFor(t, 30*time.Second, "the sleep running", func() bool {
		return strings.Contains(text(call(t, c, "run_shell", map[string]any{"command": "ps -eo args", "sandbox_id": id})), "sleep 30")
	})
	tg.gw.Sweep(time.Now().Add(sandbox.DefaultLimits.MaxLifetime + time.Minute))
	if left := tg.listed(t); len(left) != 1 || left[0].State != sandbox.StatePaused {
		t.Fatalf("after the maximum lifetime: %+v, want sandbox %s paused", left, id)
	}
	if res := <-busy; res == nil || !res.IsError {
		t.Errorf("the call in flight when the run ended: %v; want an error", res)
	}
	res := mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "kept.txt", "sandbox_id": id}))
	if text(res) != "kept" {
		t.Fatalf("read_file after the pause: %q", allText(res))
	}
	info := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", map[string]any{"sandbox_id": id})))
	if exp, _ := time.Parse(time.RFC3339Nano, info["expires_at"].(string)); time.Until(exp) < sandbox.DefaultLimits.MaxLifetime-time.Minute {
		t.Errorf("after the resume the sandbox expires at %v; want a whole lifetime from now", exp)
	}

	destroying := startGateway(t, func(c *gateway.Config) { c.OnIdle = "destroy" })
	dc := modernClient(t, destroying.URL)
	mustOK(t, "sandbox_create", call(t, dc, "sandbox_create", nil))
	destroying.gw.Sweep(time.Now().Add(sandbox.DefaultLimits.MaxLifetime + time.Minute))
	if n := len(destroying.containers(t)); n != 0 {
		t.Fatalf("%d containers after the maximum lifetime with --on-idle destroy, want 0", n)
	}
}

// TestShutdownKeepsSessionless: a graceful stop (an operator's SIGTERM,
// an upgrade) ends the legacy session and removes its container, whose
// session id dies with the process, but leaves the sessionless sandbox
// running; the next gateway adopts it and its file is still there. Before,
// the stop removed every sandbox with its files (audit: sandbox.destroy,
// reason shutdown).
func TestShutdownKeepsSessionless(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	mustOK(t, "run_shell", call(t, legacyClient(t, tg.URL), "run_shell", map[string]any{"command": "true"}))
	c := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": id, "path": "kept.txt", "content": "kept over a restart"}))
	if n := len(tg.containers(t)); n != 2 {
		t.Fatalf("%d containers, want 2", n)
	}
	tg.Close()
	if left := tg.containers(t); len(left) != 1 || left[0].ID != id || left[0].State != "running" {
		t.Fatalf("containers after shutdown: %+v; want only the sessionless sandbox %s, running", left, id)
	}
	if reason := destroyedFor(t, tg.AuditPath, id); reason != "" {
		t.Fatalf("the audit log says sandbox %s was destroyed (%s) at shutdown", id, reason)
	}

	tg2 := restart(t, tg)
	res := mustOK(t, "read_file after restart", call(t, modernClient(t, tg2.URL), "read_file", map[string]any{"sandbox_id": id, "path": "kept.txt"}))
	if got := res.Content[0].(mcp.TextContent).Text; got != "kept over a restart" {
		t.Fatalf("read_file after restart = %q", got)
	}
}

// TestSandboxQuota: one principal cannot hold more live sandboxes than the
// configured limit, and the error says what to do.
func TestSandboxQuota(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.MaxSandboxesPerTenant = 2 })
	c := modernClient(t, tg.URL)
	// Five creations at once: exactly two may win.
	results := make(chan *mcp.CallToolResult, 5)
	for range 5 {
		go func() { results <- call(t, c, "sandbox_create", nil) }()
	}
	var ids []any
	for range 5 {
		res := <-results
		if !res.IsError {
			ids = append(ids, structuredAs[map[string]any](t, res)["sandbox_id"])
			continue
		}
		if !strings.Contains(text(res), "limit 2") || !strings.Contains(text(res), "sandbox_destroy") {
			t.Fatalf("quota error does not say what to do: %q", text(res))
		}
	}
	if len(ids) != 2 || len(tg.containers(t)) != 2 {
		t.Fatalf("%d creations succeeded and %d containers exist; want 2 and 2", len(ids), len(tg.containers(t)))
	}
	mustOK(t, "sandbox_destroy", call(t, c, "sandbox_destroy", map[string]any{"sandbox_id": ids[0]}))
	mustOK(t, "sandbox_create after destroy", call(t, c, "sandbox_create", nil))
}

// TestToolCallRateLimit: past the per-tenant rate, calls are refused with
// an error that says when to retry, and the refusal is audited.
func TestToolCallRateLimit(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.ToolCallsPerMinute = 3 })
	c := legacyClient(t, tg.URL)
	for range 3 {
		mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	}
	res := call(t, c, "run_shell", map[string]any{"command": "true"})
	if !res.IsError || !strings.Contains(text(res), "3 tool calls a minute") || !strings.Contains(text(res), "retry in") {
		t.Fatalf("4th call: isError=%v %q", res.IsError, text(res))
	}
	events := auditRecords(t, tg.AuditPath)
	if last := events[len(events)-1]; last.DenyReason != "rate limit" {
		t.Fatalf("last audit record: %+v", last)
	}
}
