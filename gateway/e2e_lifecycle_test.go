package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
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

// TestIdleSessionIsEnded: a session unused for the idle TTL loses its
// container and its id stops working.
func TestIdleSessionIsEnded(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.Limits.IdleTTL = 2 * time.Second })
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	waitFor(t, 15*time.Second, "idle sandbox removed", func() bool { return len(tg.containers(t)) == 0 })
	if _, err := callErr(t.Context(), c, "run_shell", map[string]any{"command": "true"}); err == nil {
		t.Fatal("an idle-ended session still accepts calls")
	}
}

// TestMaxLifetime: a busy sessionless sandbox is still removed at its
// maximum lifetime.
func TestMaxLifetime(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.Limits.MaxLifetime = 3 * time.Second })
	c := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"]
	waitFor(t, 15*time.Second, "expired sandbox removed", func() bool {
		call(t, c, "run_shell", map[string]any{"command": "true", "sandbox_id": id}) // keep it busy
		return len(tg.containers(t)) == 0
	})
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
