package gateway_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// Two gateway replicas (Config.Replicated) that share one in-process
// provider, as replicas share a Kubernetes namespace: separate var dirs
// and audit logs, nothing else in common.

// startReplica starts a replicated gateway on the shared provider local.
func startReplica(t testing.TB, local *sandboxtest.Local, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	tg := &testGateway{Instance: "local", VarDir: t.TempDir(), Local: local}
	tg.start(t, "", func(c *gateway.Config) {
		c.Replicated = true
		// Timers stay out of the way: tests sweep and reconcile by hand.
		c.Limits.IdleTTL = time.Hour
		if mutate != nil {
			mutate(c)
		}
	})
	t.Cleanup(func() { tg.Close() })
	return tg
}

// replicaPair starts two replicas on one fresh provider.
func replicaPair(t testing.TB, mutate func(*gateway.Config)) (a, b *testGateway, local *sandboxtest.Local) {
	t.Helper()
	local = sandboxtest.NewLocal(t)
	return startReplica(t, local, mutate), startReplica(t, local, mutate), local
}

// createOn makes a sandbox with sandbox_create on c and returns its id.
func createOn(t testing.TB, c *client.Client, args map[string]any) string {
	t.Helper()
	res := mustOK(t, "sandbox_create", call(t, c, "sandbox_create", args))
	return structuredAs[struct {
		SandboxID string `json:"sandbox_id"`
	}](t, res).SandboxID
}

// exists reports whether the provider still holds sandbox id.
func exists(t testing.TB, p sandbox.Provider, id string) bool {
	t.Helper()
	infos, err := p.List(t.Context(), sandbox.Filter{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return len(infos) == 1
}

// TestReplicasShareSandboxes: a sandbox made on one replica is used and
// destroyed on the other, found by its id; the first then answers not
// found for it; and each replica's audit log verifies on its own.
func TestReplicasShareSandboxes(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	ca, cb := modernClient(t, a.URL), modernClient(t, b.URL)
	id := createOn(t, ca, nil)
	mustOK(t, "write_file on A", call(t, ca, "write_file", map[string]any{"sandbox_id": id, "path": "from-a.txt", "content": "written on A"}))

	// Concurrent first calls on B: one lookup wins, all use its box.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res, err := callErr(t.Context(), cb, "read_file", map[string]any{"sandbox_id": id, "path": "from-a.txt"})
			if err != nil || res.IsError || !strings.Contains(text(res), "written on A") {
				t.Errorf("concurrent read_file on B: %v %q", err, text(res))
			}
		})
	}
	wg.Wait()
	r, _ := shell(t, cb, "cat from-a.txt; echo ' and run on B' > from-b.txt", map[string]any{"sandbox_id": id})
	if r.ExitCode != 0 || r.Stdout != "written on A" {
		t.Fatalf("run_shell on B: %+v", r)
	}
	res := mustOK(t, "read_file on B", call(t, cb, "read_file", map[string]any{"sandbox_id": id, "path": "from-b.txt"}))
	if !strings.Contains(text(res), "and run on B") {
		t.Fatalf("read_file on B: %q", text(res))
	}
	if !b.gw.Tracks(id) {
		t.Fatal("B used the sandbox but does not track it")
	}

	mustOK(t, "sandbox_destroy on B", call(t, cb, "sandbox_destroy", map[string]any{"sandbox_id": id}))
	if exists(t, local, id) {
		t.Fatal("the sandbox destroyed on B is still in the provider")
	}
	for tool, args := range map[string]map[string]any{"run_shell": {"sandbox_id": id, "command": "true"}, "sandbox_info": {"sandbox_id": id}} {
		res, err := callErr(t.Context(), ca, tool, args)
		if err != nil || !res.IsError || !strings.Contains(text(res), "sandbox not found") {
			t.Fatalf("%s on A after B destroyed the sandbox: %v %q; want not found", tool, err, text(res))
		}
	}
	if a.gw.Tracks(id) {
		t.Error("A still tracks the sandbox B destroyed")
	}
	for name, tg := range map[string]*testGateway{"A": a, "B": b} {
		rep, err := audit.VerifyFile(tg.AuditPath)
		if err != nil || rep.FirstBroken != 0 || rep.Records == 0 {
			t.Errorf("audit log of %s: %+v, %v; want a whole chain", name, rep, err)
		}
	}
	if !hasRecord(t, a.AuditPath, audit.KindSandboxCreate, id) || !hasRecord(t, b.AuditPath, audit.KindSandboxDestroy, id) {
		t.Error("want the create in A's audit log and the destroy in B's")
	}
}

// TestReplicasSandboxGoneSilently: another replica destroyed a sandbox
// and its runner's connection never closed (a Kubernetes pod's network
// can go first), so this replica learns of the loss from its heartbeat
// while a call waits. That call answers that the sandbox is not found,
// not that its next call replaces it, and the replica forgets it.
func TestReplicasSandboxGoneSilently(t *testing.T) {
	t.Parallel()
	a, _, local := replicaPair(t, nil)
	ca := modernClient(t, a.URL)
	id := createOn(t, ca, nil)
	mustOK(t, "run_shell", call(t, ca, "run_shell", map[string]any{"sandbox_id": id, "command": "true"}))
	if err := local.Lose(id); err != nil {
		t.Fatal(err)
	}
	res, err := callErr(t.Context(), ca, "run_shell", map[string]any{"sandbox_id": id, "command": "true"})
	if err != nil || !res.IsError || !strings.Contains(text(res), "sandbox not found") {
		t.Fatalf("a call on a sandbox gone without a word: %v %q; want not found", err, text(res))
	}
	if a.gw.Tracks(id) {
		t.Error("the replica still tracks the sandbox")
	}
}

// hasRecord reports whether the audit log at path has a record of kind
// for sandbox id.
func hasRecord(t testing.TB, path string, kind audit.Kind, id string) bool {
	t.Helper()
	for _, ev := range auditRecords(t, path) {
		if ev.Kind == kind && ev.SandboxID == id {
			return true
		}
	}
	return false
}

// TestReplicasQuota: a tenant's quota counts its sandboxes on every
// replica; after a race, the newest sandboxes beyond the limit go.
func TestReplicasQuota(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, func(c *gateway.Config) { c.MaxSandboxesPerTenant = 2 })
	ca, cb := modernClient(t, a.URL), modernClient(t, b.URL)
	first, second := createOn(t, ca, nil), createOn(t, ca, nil)
	res := call(t, cb, "sandbox_create", nil)
	if !res.IsError || !strings.Contains(text(res), "quota") || !strings.Contains(text(res), "limit 2") {
		t.Fatalf("a third sandbox on B: %q; want the quota error", text(res))
	}
	mustOK(t, "sandbox_destroy on B", call(t, cb, "sandbox_destroy", map[string]any{"sandbox_id": first}))
	third := createOn(t, cb, nil)

	// A race: both creations passed the first count. The newer one
	// (third, made last) is not among the limit oldest and goes.
	if err := b.gw.Admit(t.Context(), third, 1); err == nil || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("admit the newer sandbox over a limit of 1: %v; want the quota error", err)
	}
	if exists(t, local, third) || !exists(t, local, second) {
		t.Fatal("admit removed the wrong sandbox")
	}
	if err := a.gw.Admit(t.Context(), second, 1); err != nil {
		t.Fatalf("admit the oldest sandbox: %v", err)
	}
}

// TestReplicasIdle: a sandbox another replica uses is not idle: its use
// is recorded in the provider, and the sweep of a replica that has not
// used it for longer than the idle TTL reads it there and spares it.
// Once nobody has used it for the idle TTL, the sweep pauses it (the
// shipped --on-idle pause), and the other replica's next call resumes
// it, having read the pause from the provider's record.
func TestReplicasIdle(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	a.gw.SetTouchEvery(0) // record every use; the throttle is IdleTTL/8
	ca, cb := modernClient(t, a.URL), modernClient(t, b.URL)
	id := createOn(t, ca, nil)
	shell(t, cb, "true", map[string]any{"sandbox_id": id}) // B tracks it now
	usedOnB := time.Now()
	shell(t, ca, "true", map[string]any{"sandbox_id": id})
	used := waitRecordedUse(t, local, id, usedOnB)

	idle := time.Hour
	b.gw.Sweep(used.Add(idle - time.Nanosecond)) // idle on B, not on A
	if !exists(t, local, id) {
		t.Fatal("B's sweep removed a sandbox A used within the idle TTL")
	}
	mustOK(t, "run_shell on B after its sweep", call(t, cb, "run_shell", map[string]any{"sandbox_id": id, "command": "true"}))

	b.gw.Sweep(time.Now().Add(idle + time.Hour)) // idle everywhere
	if infos, err := local.List(t.Context(), sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].State != sandbox.StatePaused {
		t.Fatalf("after B's sweep of a sandbox nobody used for longer than the idle TTL: %+v, %v; want it paused", infos, err)
	}
	res := mustOK(t, "run_shell on A after B paused the sandbox", call(t, ca, "run_shell", map[string]any{"sandbox_id": id, "command": "echo back"}))
	if out := allText(res); !strings.Contains(out, "back") || !strings.Contains(out, "was paused") {
		t.Fatalf("run_shell on A after B paused the sandbox as idle: %q; want it resumed, and said so", out)
	}
}

// waitRecordedUse waits until the provider's record of id holds a use
// after after, and returns it.
func waitRecordedUse(t testing.TB, p sandbox.Provider, id string, after time.Time) time.Time {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		infos, err := p.List(t.Context(), sandbox.Filter{ID: id})
		if err != nil || len(infos) != 1 {
			t.Fatalf("record of %s: %+v, %v", id, infos, err)
		}
		if infos[0].LastUsed.After(after) {
			return infos[0].LastUsed
		}
		if time.Now().After(deadline) {
			t.Fatalf("no use of %s after %v recorded within a minute (last %v)", id, after, infos[0].LastUsed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicasReconcile: a replica's reconciliation, on its timer and
// at its start, leaves the sandboxes of another alone, sessionless and
// session-bound, however old; it acts on what is due whoever made it: a
// sessionless sandbox past its lifetime is paused (the shipped --on-idle
// pause), with its files, not removed.
func TestReplicasReconcile(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	ca, legacy := modernClient(t, a.URL), legacyClient(t, a.URL)
	free := createOn(t, ca, nil)
	shell(t, legacy, "true", nil)
	bound := sessionSandbox(t, local, legacy.GetSessionId())
	expired, err := local.Create(t.Context(), sandbox.Spec{Owner: gateway.LocalPrincipal.Digest(), Tenant: "local", ExpiresAt: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}

	b.gw.Reconcile(time.Now().Add(10 * time.Minute)) // past the grace, within the idle TTL
	c := startReplica(t, local, nil)                 // a replica starting reconciles too
	for name, id := range map[string]string{"sessionless": free, "session-bound": bound} {
		if !exists(t, local, id) {
			t.Errorf("another replica's reconciliation removed A's %s sandbox", name)
		}
	}
	if infos, err := local.List(t.Context(), sandbox.Filter{ID: expired.ID()}); err != nil || len(infos) != 1 || infos[0].State != sandbox.StatePaused {
		t.Errorf("the expired sandbox after two reconciliations: %+v, %v; want it paused", infos, err)
	}
	mustOK(t, "run_shell in A's session", call(t, legacy, "run_shell", map[string]any{"command": "true"}))
	mustOK(t, "run_shell on C", call(t, modernClient(t, c.URL), "run_shell", map[string]any{"sandbox_id": free, "command": "true"}))
}

// sessionSandbox returns the id of the sandbox bound to session.
func sessionSandbox(t testing.TB, p sandbox.Provider, session string) string {
	t.Helper()
	infos, err := p.List(t.Context(), sandbox.Filter{Session: session})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sandbox of session %s: %+v, %v", session, infos, err)
	}
	return infos[0].ID
}

// TestReplicasClose: a replica that shuts down ends its sessions and
// removes their sandboxes, but leaves its sessionless sandboxes to the
// others.
func TestReplicasClose(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	legacy := legacyClient(t, a.URL)
	free := createOn(t, modernClient(t, a.URL), nil)
	shell(t, legacy, "true", nil)
	bound := sessionSandbox(t, local, legacy.GetSessionId())

	a.Close()
	if exists(t, local, bound) {
		t.Error("A's shutdown left its session's sandbox")
	}
	if !exists(t, local, free) {
		t.Fatal("A's shutdown removed a sessionless sandbox")
	}
	r, _ := shell(t, modernClient(t, b.URL), "echo still here", map[string]any{"sandbox_id": free})
	if r.Stdout != "still here\n" {
		t.Fatalf("run_shell on B after A shut down: %+v", r)
	}
}

// TestReplicasWrongReplica: a legacy session lives on the replica that
// started it. On another, its requests get a 404 that says why and what
// to do, and mcp-go's client takes the 404 as a session to start again.
func TestReplicasWrongReplica(t *testing.T) {
	t.Parallel()
	a, b, _ := replicaPair(t, nil)
	legacy := legacyClient(t, a.URL)
	session := legacy.GetSessionId()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":"true"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "Session not found on this gateway replica: it may belong to another replica (legacy MCP sessions live on the replica that started them; route requests by the Mcp-Session-Id header, i.e. sticky sessions), or it ended. Start a new session with initialize, or use protocol 2026-07-28 with sandbox_create, which works on any replica\n"
	if resp.StatusCode != http.StatusNotFound || string(got) != want {
		t.Fatalf("the session's request on B: %d %q; want 404 %q", resp.StatusCode, got, want)
	}

	// The same through mcp-go's client, pointed at the wrong replica
	// with the session id (as a load balancer without stickiness would).
	tr, err := transport.NewStreamableHTTP(b.URL, transport.WithSession(session))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = tr.SendRequest(t.Context(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(8), Method: "tools/call",
		Params: map[string]any{"name": "run_shell", "arguments": map[string]any{"command": "true"}}})
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Errorf("mcp-go's transport on the wrong replica: err = %v; want ErrSessionTerminated", err)
	}
	mustOK(t, "run_shell on the session's replica", call(t, legacy, "run_shell", map[string]any{"command": "true"}))
}

// TestReplicasNetwork: an allowlist narrowed on one replica applies on
// the other, whose egress session the narrowing replica takes over, and
// the other shows the new list.
func TestReplicasNetwork(t *testing.T) {
	t.Parallel()
	world := newEgressWorld(t)
	a, b, local := replicaPair(t, func(c *gateway.Config) { world.configure(t, c, egressCeiling...) })
	ca, cb := modernClient(t, a.URL), modernClient(t, b.URL)
	id := createOn(t, ca, map[string]any{"network": map[string]any{"allow": []string{"allowed.test:80", "sub.allowed.test:80"}}})
	fetch := "for i in 1 2 3 4 5; do out=$(curl -sS http://allowed.test/hello 2>&1); case $out in *'not connected'*) sleep 1;; *) break;; esac; done; echo \"$out\""
	if r, _ := shell(t, cb, fetch, map[string]any{"sandbox_id": id}); !strings.Contains(r.Stdout, "hello from allowed.test") {
		t.Fatalf("before narrowing, through B: %q %q", r.Stdout, r.Stderr)
	}

	mustOK(t, "sandbox_network on A", call(t, ca, "sandbox_network", map[string]any{"sandbox_id": id, "allow": []string{"sub.allowed.test:80"}}))
	if infos, err := local.List(t.Context(), sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || !slices.Equal(infos[0].Network, []string{"sub.allowed.test:80"}) {
		t.Fatalf("record after narrowing on A: %+v, %v", infos, err)
	}
	for range 2 { // B's first call may find its old session still closing
		if r, _ := shell(t, cb, fetch, map[string]any{"sandbox_id": id}); !strings.Contains(r.Stdout, "not in this sandbox's allowlist") {
			t.Fatalf("after narrowing on A, through B: %q %q; want refused", r.Stdout, r.Stderr)
		}
	}
	info := structuredAs[struct {
		Allow []string `json:"allow"`
	}](t, mustOK(t, "sandbox_network on B", call(t, cb, "sandbox_network", map[string]any{"sandbox_id": id})))
	if !slices.Equal(info.Allow, []string{"sub.allowed.test:80"}) {
		t.Errorf("B shows the allowlist %v; want the one A set", info.Allow)
	}
}

// TestReplicatedNeeds: a replicated gateway needs a provider that
// records (sandbox.Recorder), and for a warm pool one that records claims
// (sandbox.PoolClaims).
func TestReplicatedNeeds(t *testing.T) {
	t.Parallel()
	cfg := gateway.Config{Addr: "127.0.0.1:0", VarDir: t.TempDir(), Replicated: true}
	store, err := audit.OpenFile(cfg.WithDefaults().AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	plain := struct{ sandbox.Provider }{sandboxtest.NewLocal(t)} // a Provider, no Recorder
	if g, err := gateway.New(t.Context(), cfg, plain, store, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "sandbox.Recorder") {
		if g != nil {
			g.Close(t.Context())
		}
		t.Errorf("New(Replicated) with a provider that records nothing: %v; want an error naming sandbox.Recorder", err)
	}
	cfg.Pool = map[string]int{cfg.WithDefaults().Image: 2}
	if g, err := gateway.New(t.Context(), cfg, plain, store, slog.New(slog.DiscardHandler)); !errors.Is(err, gateway.ErrPoolReplicated) {
		if g != nil {
			g.Close(t.Context())
		}
		t.Errorf("New(Replicated, pool 2) with a provider that records no claims: %v; want ErrPoolReplicated", err)
	}
}

// TestReplicasDoNotFightOverEgress: the runner keeps one egress session,
// the newest. A replica whose session another took does not dial again
// until it is used itself; if it did, the two would take it from each
// other every second, each time cutting the sandbox's open connections.
func TestReplicasDoNotFightOverEgress(t *testing.T) {
	t.Parallel()
	world := newEgressWorld(t)
	a, b, _ := replicaPair(t, func(c *gateway.Config) { world.configure(t, c, egressCeiling...) })
	ca, cb := modernClient(t, a.URL), modernClient(t, b.URL)
	id := createOn(t, ca, map[string]any{"network": map[string]any{"allow": []string{"allowed.test:80"}}})
	shell(t, ca, "true", map[string]any{"sandbox_id": id})
	shell(t, cb, "true", map[string]any{"sandbox_id": id}) // B's session replaces A's
	// A tunnel held open through B's session, used only after a while.
	script := tunnelScript + `import time
s, line, _ = tunnel()
time.sleep(4)
s.sendall(b"GET /hello HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
s.settimeout(10)
data = b""
while True:
    try:
        c = s.recv(4096)
    except OSError as e:
        print("tunnel broken:", e); break
    if not c:
        break
    data += c
print(line, data.decode(errors="replace"))
`
	r, _ := shell(t, cb, "python3 -c "+shellQuote(script), map[string]any{"sandbox_id": id})
	if !strings.Contains(r.Stdout, "HTTP/1.1 200") || !strings.Contains(r.Stdout, "hello from allowed.test") {
		t.Fatalf("a tunnel held for 4 s while both replicas hold runner connections: %q %q; want it intact", r.Stdout, r.Stderr)
	}
}
