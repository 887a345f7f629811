package gateway_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
)

// namedModernClient connects a sessionless 2026-07-28 client whose
// requests declare clientInfo name.
func namedModernClient(t *testing.T, url, name string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(t.Context(), req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var (
	createdDefault  = regexp.MustCompile(`created your default sandbox ([0-9a-f]{32})`)
	usingDefault    = regexp.MustCompile(`using your default sandbox ([0-9a-f]{32})`)
	replacedDefault = regexp.MustCompile(`default sandbox ([0-9a-f]{32}) is gone .*created a new default sandbox ([0-9a-f]{32})`)
)

// noteID returns the sandbox id re names in res's notes, failing when
// absent.
func noteID(t *testing.T, res *mcp.CallToolResult, re *regexp.Regexp) []string {
	t.Helper()
	m := re.FindStringSubmatch(allText(res))
	if m == nil {
		t.Fatalf("result does not match %q:\n%s", re, allText(res))
	}
	return m[1:]
}

// TestLocalDefaultSandbox: a sessionless client's sandbox tools work
// without sandbox_id, in one default sandbox per (principal, client) that
// each result names; sandbox_id still picks another; a default that is
// gone (idle here) is replaced with a note.
func TestLocalDefaultSandbox(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	a := namedModernClient(t, tg.URL, "client-a")

	res := mustOK(t, "write_file", call(t, a, "write_file", map[string]any{"path": "f.txt", "content": "kept"}))
	id := noteID(t, res, createdDefault)[0]
	res = mustOK(t, "read_file", call(t, a, "read_file", map[string]any{"path": "f.txt"}))
	if got := noteID(t, res, usingDefault)[0]; got != id || !strings.Contains(text(res), "kept") {
		t.Fatalf("second call: default %s (want %s): %s", got, id, text(res))
	}
	info := mustOK(t, "sandbox_info", call(t, a, "sandbox_info", nil))
	if !strings.Contains(text(info), id) {
		t.Errorf("sandbox_info without sandbox_id does not describe the default %s: %s", id, text(info))
	}

	// Another client of the same principal has a default of its own.
	b := namedModernClient(t, tg.URL, "client-b")
	other := noteID(t, mustOK(t, "run_shell", call(t, b, "run_shell", map[string]any{"command": "true"})), createdDefault)[0]
	if other == id {
		t.Fatalf("clients a and b share default sandbox %s", id)
	}

	// sandbox_id still chooses: a's default is usable by id from b.
	res = mustOK(t, "read_file", call(t, b, "read_file", map[string]any{"path": "f.txt", "sandbox_id": id}))
	if strings.Contains(text(res), "default sandbox") || !strings.Contains(text(res), "kept") {
		t.Errorf("read_file with sandbox_id: %s", text(res))
	}

	// Idle past the TTL: the sweep pauses it (the shipped --on-idle),
	// and the next call resumes it with its files and says so.
	tg.gw.Sweep(time.Now().Add(time.Hour))
	// "ls", not "ls /workspace": the in-process provider's runner runs on
	// the host, where /workspace is no path of its own.
	res = mustOK(t, "run_shell", call(t, a, "run_shell", map[string]any{"command": "ls"}))
	if got := noteID(t, res, usingDefault)[0]; got != id || !strings.Contains(text(res), "f.txt") || !strings.Contains(allText(res), "was paused") {
		t.Fatalf("call after the idle TTL: default %s (want %s resumed, f.txt kept): %s", got, id, allText(res))
	}
}

// TestLocalDefaultSandboxIdleDestroy: with --on-idle destroy the sweep
// removes an idle default sandbox, and the next call says so and makes
// another.
func TestLocalDefaultSandboxIdleDestroy(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.OnIdle = "destroy" })
	a := namedModernClient(t, tg.URL, "client-a")
	id := noteID(t, mustOK(t, "write_file", call(t, a, "write_file", map[string]any{"path": "f.txt", "content": "x"})), createdDefault)[0]
	tg.gw.Sweep(time.Now().Add(time.Hour))
	res := mustOK(t, "run_shell", call(t, a, "run_shell", map[string]any{"command": "ls"}))
	ids := noteID(t, res, replacedDefault)
	if ids[0] != id || ids[1] == id {
		t.Fatalf("replacement note names %v, want %s replaced by a new one", ids, id)
	}
}

// TestLocalDefaultSandboxQuota: a default sandbox counts against the
// tenant's quota like any other, and concurrent first calls of one
// client make one.
func TestLocalDefaultSandboxQuota(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.MaxSandboxesPerTenant = 1 })
	a := namedModernClient(t, tg.URL, "client-a")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { mustOK(t, "run_shell", call(t, a, "run_shell", map[string]any{"command": "true"})) })
	}
	wg.Wait()
	b := namedModernClient(t, tg.URL, "client-b")
	res := call(t, b, "run_shell", map[string]any{"command": "true"})
	if !res.IsError || !strings.Contains(text(res), "quota") {
		t.Fatalf("a second client's default beyond the quota of 1: %s", text(res))
	}
}

// TestModernLogLevel: a 2026-07-28 request gets notifications/message
// only when its _meta declares io.modelcontextprotocol/logLevel (SEP-2575;
// the conformance suite checks this only with a fixture tool).
func TestModernLogLevel(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	var mu sync.Mutex
	var logs []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			mu.Lock()
			logs = append(logs, n.Params.AdditionalFields["logger"].(string))
			mu.Unlock()
		}
	})
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "echo quiet"}))
	mu.Lock()
	if len(logs) != 0 {
		t.Errorf("log notifications without a logLevel: %v", logs)
	}
	mu.Unlock()
	req := mcp.SetLevelRequest{}
	req.Params.Level = mcp.LoggingLevelInfo
	if err := c.SetLevel(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "echo loud"}))
	mu.Lock()
	defer mu.Unlock()
	if len(logs) == 0 {
		t.Errorf("no log notification for a request with logLevel info")
	}
}
