package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// TestSessionsAreIsolated: two sessions get two sandboxes that cannot see
// each other's files or processes, nor use each other's sandbox_id.
func TestSessionsAreIsolated(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	a, b := legacyClient(t, tg.URL), legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, a, "write_file", map[string]any{"path": "secret.txt", "content": "a's secret"}))
	mustOK(t, "run_shell", call(t, a, "run_shell", map[string]any{"command": "sleep 777", "background": true}))

	res := call(t, b, "read_file", map[string]any{"path": "secret.txt"})
	if !res.IsError {
		t.Fatalf("session b read session a's file: %q", text(res))
	}
	r, _ := shell(t, b, "ps -eo args --no-headers; ls -la /workspace /run/sandgate", nil)
	if strings.Contains(r.Stdout, "sleep 777") || strings.Contains(r.Stdout, "secret") {
		t.Fatalf("session b sees session a:\n%s", r.Stdout)
	}
	infoA := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, a, "sandbox_info", nil)))
	infoB := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, b, "sandbox_info", nil)))
	if infoA["sandbox_id"] == infoB["sandbox_id"] || infoA["container_id"] == infoB["container_id"] {
		t.Fatalf("sessions share a sandbox: %v", infoA["sandbox_id"])
	}
	res = call(t, b, "read_file", map[string]any{"path": "secret.txt", "sandbox_id": infoA["sandbox_id"]})
	if !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("session b used session a's sandbox_id: %q", text(res))
	}
}

// TestRestartKeepsSessionSandboxes: with the shipped --on-idle pause, a
// crashed gateway's session sandboxes outlive their sessions: the next
// gateway adopts them, its first sweep pauses them (their sessions are
// gone, so they are idle), and their owner resumes one by its id with
// its files.
func TestRestartKeepsSessionSandboxes(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "kept.txt", "content": "kept"}))
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))["sandbox_id"].(string)
	tg.crash()
	tg2 := restart(t, tg)
	if left := tg2.containers(t); len(left) != 1 || left[0].ID != id {
		t.Fatalf("containers after restart: %+v, want the session's sandbox %s kept", left, id)
	}
	tg2.gw.Sweep(time.Now())
	if left := tg2.listed(t); len(left) != 1 || left[0].State != sandbox.StatePaused {
		t.Fatalf("after the first sweep: %+v, want sandbox %s paused", left, id)
	}
	c2 := legacyClient(t, tg2.URL)
	res := mustOK(t, "read_file", call(t, c2, "read_file", map[string]any{"path": "kept.txt", "sandbox_id": id}))
	if text(res) != "kept" || !strings.Contains(allText(res), "was paused") {
		t.Fatalf("read_file by id after the restart: %q; want the file and a note that the sandbox was resumed", allText(res))
	}
	rep, err := audit.VerifyFile(tg2.AuditPath)
	if err != nil || !rep.OK() {
		t.Fatalf("audit log after crash and restart: %+v %v", rep, err)
	}
}

// TestDeleteRemovesContainer: DELETE on the session ends it, removes its
// container, and the session id stops working.
func TestDeleteRemovesContainer(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	if n := len(tg.containers(t)); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	deleteSession(t, tg.URL, c.GetSessionId())
	if n := len(tg.containers(t)); n != 0 {
		t.Fatalf("%d containers after DELETE, want 0", n)
	}
	if _, err := callErr(t.Context(), c, "run_shell", map[string]any{"command": "true"}); err == nil {
		t.Fatal("a deleted session still accepts calls")
	}
}

// TestRestartRemovesOrphans: with --on-idle destroy, a gateway that
// dies without cleanup leaves containers; the next one removes them at
// start.
func TestRestartRemovesOrphans(t *testing.T) {
	t.Parallel()
	destroy := func(c *gateway.Config) { c.OnIdle = "destroy" }
	tg := startGateway(t, destroy)
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	tg.crash()
	if n := len(tg.containers(t)); n != 1 {
		t.Fatalf("%d containers after crash, want the 1 orphan", n)
	}
	tg2 := restart(t, tg, destroy)
	if n := len(tg2.containers(t)); n != 0 {
		t.Fatalf("%d containers after restart, want 0", n)
	}
	rep, err := audit.VerifyFile(tg2.AuditPath)
	if err != nil || !rep.OK() {
		t.Fatalf("audit log after crash and restart: %+v %v", rep, err)
	}
}

// TestAuditChain: every tool call leaves start and end records with the
// outcome; the chain verifies, and editing one record breaks it there.
func TestAuditChain(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "printf 'leak%s\\n' 4242; exit 0"}))
	call(t, c, "run_shell", map[string]any{"command": "exit 7"})
	logRes := structuredAs[map[string][]audit.Event](t, mustOK(t, "audit_log", call(t, c, "audit_log", map[string]any{"limit": 10})))
	if len(logRes["records"]) == 0 {
		t.Fatal("audit_log returned nothing")
	}

	events := auditRecords(t, tg.AuditPath)
	var ends []audit.Event
	kinds := map[audit.Kind]int{}
	for _, e := range events {
		kinds[e.Kind]++
		if e.Kind == audit.KindToolEnd && e.Tool == "run_shell" {
			ends = append(ends, e)
		}
	}
	if kinds[audit.KindSessionStart] != 1 || kinds[audit.KindSandboxCreate] != 1 || kinds[audit.KindToolStart] < 3 {
		t.Fatalf("record kinds %v", kinds)
	}
	if len(ends) != 2 || *ends[0].ExitCode != 0 || ends[0].Outcome != "ok" || *ends[1].ExitCode != 7 || ends[1].Outcome != "error" {
		t.Fatalf("run_shell end records: %+v", ends)
	}
	if ends[0].Summary["command"] == "" || ends[0].SandboxID == "" || ends[0].ContainerID == "" || !strings.HasPrefix(ends[0].ArgsDigest, "sha256:") {
		t.Fatalf("end record lacks detail: %+v", ends[0])
	}
	raw, _ := readFile(tg.AuditPath)
	if strings.Contains(raw, "leak4242") {
		t.Fatal("tool output leaked into the audit log")
	}

	rep, err := audit.VerifyFile(tg.AuditPath)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	lines := strings.Split(raw, "\n")
	target := -1
	for i, l := range lines {
		if strings.Contains(l, `"kind":"tool.end"`) && strings.Contains(l, `"outcome":"ok"`) {
			target = i
			break
		}
	}
	if target < 0 {
		t.Fatal("no successful tool.end record to tamper with")
	}
	lines[target] = strings.Replace(lines[target], `"outcome":"ok"`, `"outcome":"error"`, 1)
	tampered := t.TempDir() + "/tampered.jsonl"
	writeFile(t, tampered, strings.Join(lines, "\n"))
	rep, err = audit.VerifyFile(tampered)
	if err != nil || rep.OK() || rep.FirstBroken != target+1 {
		t.Fatalf("tampered log: %+v %v (want first broken line %d)", rep, err, target+1)
	}
}

// TestSessionIDRequired: a legacy request without a session id gets a 400
// that says what to do. (GET /mcp, the standalone stream, is tested in
// standalone_test.go.)
func TestSessionIDRequired(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	post, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, tg.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Accept", "application/json, text/event-stream")
	post.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "initialize") {
		t.Fatalf("no session header: %d %s", resp.StatusCode, body)
	}
}

// TestInvalidArgumentsAreReadable: schema violations come back as an
// isError result naming each problem in words.
func TestInvalidArgumentsAreReadable(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	res := call(t, c, "run_shell", map[string]any{"timeout": "soon", "colour": "red"})
	msg := text(res)
	for _, want := range []string{"missing property 'command'", "timeout", "colour"} {
		if !res.IsError || !strings.Contains(msg, want) {
			t.Fatalf("want isError naming %q, got %v %q", want, res.IsError, msg)
		}
	}
	if strings.Contains(msg, "&{") {
		t.Fatalf("message prints Go structs: %q", msg)
	}
	events := auditRecords(t, tg.AuditPath)
	last := events[len(events)-1]
	if last.Kind != audit.KindToolDenied || last.DenyReason != "invalid arguments" {
		t.Fatalf("last audit record: %+v", last)
	}
}
