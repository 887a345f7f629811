package gateway_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
)

// putManifest writes a manifest into dir the way an operator should: to
// a hidden temporary file, renamed into place.
func putManifest(t *testing.T, dir, file string, m map[string]any) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".tmp-"+file)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
}

func objectSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object"}
	if props != nil {
		s["properties"] = props
	}
	if required != nil {
		s["required"] = required
	}
	return s
}

// echoArgs is a tool whose command prints the JSON it gets on stdin, and
// a line on stderr.
var echoArgs = map[string]any{
	"name": "echo_args", "description": "Print the arguments.",
	"inputSchema": objectSchema(map[string]any{"text": map[string]any{"type": "string"}}, "text"),
	"command":     []string{"sh", "-c", "cat; echo; echo to-stderr >&2"},
	"scope":       "sandbox:exec", "timeout": "20s",
}

// toolNames lists the tools a client sees.
func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// awaitTools lists tools until has reports true of them, and returns
// them; the gateway polls its tools directory, so a change shows within
// seconds.
func awaitTools(t *testing.T, c *client.Client, has func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		names := toolNames(t, c)
		if has(names) {
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools never changed as expected: %v", names)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listChanges counts the notifications/tools/list_changed a client gets.
func listChanges(c *client.Client) chan struct{} {
	ch := make(chan struct{}, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			ch <- struct{}{}
		}
	})
	return ch
}

// awaitListChanged waits for a list_changed notification. A legacy
// session without a standalone GET stream (these clients open none) gets
// it with its next response, so it pings until one arrives.
func awaitListChanged(t *testing.T, c *client.Client, ch chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-ch:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no notifications/tools/list_changed")
		}
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLocalCustomTools: a manifest added to the tools directory becomes a
// tool every client sees, announced by list_changed; its command gets the
// arguments on stdin; bad arguments are refused by its schema; the audit
// log has its records; an invalid manifest is reported by name; removing
// the manifest removes the tool.
func TestLocalCustomTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := legacyClient(t, tg.URL)
	changed := listChanges(c)
	if slices.Contains(toolNames(t, c), "echo_args") {
		t.Fatal("echo_args listed before its manifest exists")
	}

	putManifest(t, dir, "echo.json", echoArgs)
	awaitTools(t, c, func(n []string) bool { return slices.Contains(n, "echo_args") })
	awaitListChanged(t, c, changed)

	res := mustOK(t, "echo_args", call(t, c, "echo_args", map[string]any{"text": "hello"}))
	r := structuredAs[execResult](t, res)
	if r.Stdout != `{"text":"hello"}`+"\n" || r.Stderr != "to-stderr\n" || r.ExitCode != 0 {
		t.Errorf("echo_args: %+v; want the arguments (without sandbox_id) on stdin", r)
	}
	bad := call(t, c, "echo_args", map[string]any{"text": 5})
	if !bad.IsError || !strings.Contains(text(bad), "invalid arguments for echo_args") || !strings.Contains(text(bad), "text") {
		t.Errorf("echo_args with a number for text: %q", text(bad))
	}

	var kinds []audit.Kind
	for _, e := range auditRecords(t, tg.AuditPath) {
		if e.Tool == "echo_args" {
			kinds = append(kinds, e.Kind)
			if strings.Contains(e.Summary["command"], "hello") {
				t.Errorf("audit summary holds an argument: %v", e.Summary)
			}
		}
	}
	if !slices.Equal(kinds, []audit.Kind{audit.KindToolStart, audit.KindToolEnd, audit.KindToolDenied}) {
		t.Errorf("audit records of echo_args: %v", kinds)
	}

	// A broken change keeps the good version, and says so in the log.
	if err := os.WriteFile(filepath.Join(dir, "echo.json"), []byte(`{"name": "echo_args", "command": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(tg.Logs.String(), "echo.json: not a JSON manifest") {
		if time.Now().After(deadline) {
			t.Fatalf("the broken manifest was never reported:\n%s", tg.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(tg.Logs.String(), "previous version of tool echo_args stays loaded") {
		t.Error("the log does not say the previous version stays")
	}
	mustOK(t, "echo_args after a broken change", call(t, c, "echo_args", map[string]any{"text": "still"}))

	// A good change replaces the tool, and is announced.
	v2 := maps.Clone(echoArgs)
	v2["command"] = []string{"sh", "-c", "echo v2"}
	putManifest(t, dir, "echo.json", v2)
	awaitListChanged(t, c, changed)
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := structuredAs[execResult](t, mustOK(t, "echo_args v2", call(t, c, "echo_args", map[string]any{"text": "x"})))
		if r.Stdout == "v2\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed manifest never took effect: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := os.Remove(filepath.Join(dir, "echo.json")); err != nil {
		t.Fatal(err)
	}
	awaitTools(t, c, func(n []string) bool { return !slices.Contains(n, "echo_args") })
	awaitListChanged(t, c, changed)
	if res, err := callErr(t.Context(), c, "echo_args", map[string]any{"text": "gone"}); err == nil && !res.IsError {
		t.Errorf("a removed tool still runs: %q", text(res))
	}
}

// TestLocalCustomToolOutput: with an output schema, the command's stdout
// becomes structuredContent, and output that does not match is a tool
// error saying so.
func TestLocalCustomToolOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := objectSchema(map[string]any{"words": map[string]any{"type": "integer"}}, "words")
	putManifest(t, dir, "wc.json", map[string]any{
		"name": "word_count", "description": "Count words.", "outputSchema": out,
		"inputSchema": objectSchema(map[string]any{"text": map[string]any{"type": "string"}}, "text"),
		"command":     []string{"python3", "-c", "import json,sys; print(json.dumps({'words': len(json.load(sys.stdin)['text'].split())}))"},
		"scope":       "sandbox:files:read", "annotations": map[string]any{"readOnly": true},
	})
	putManifest(t, dir, "liar.json", map[string]any{
		"name": "liar", "description": "Claims a count, prints words.", "outputSchema": out,
		"inputSchema": objectSchema(nil), "command": []string{"sh", "-c", `echo '{"words": "many"}'`}, "scope": "sandbox:exec",
	})
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := modernClient(t, tg.URL)
	sid := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"]

	res := mustOK(t, "word_count", call(t, c, "word_count", map[string]any{"text": "one two three", "sandbox_id": sid}))
	if got := structuredAs[map[string]int](t, res); got["words"] != 3 {
		t.Errorf("word_count structuredContent: %v", res.StructuredContent)
	}
	res = call(t, c, "liar", map[string]any{"sandbox_id": sid})
	if !res.IsError || !strings.Contains(text(res), "does not match the tool's output schema") || !strings.Contains(text(res), "words") {
		t.Errorf("liar: %q", text(res))
	}
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "word_count" && (!strings.Contains(string(tool.RawOutputSchema)+jsonOf(tool.OutputSchema), "words") ||
			tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint) {
			t.Errorf("word_count as listed: %s", jsonOf(tool))
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLocalCustomToolScope: a token without the scope a manifest requires
// gets 403 naming it; one with it runs the tool.
func TestLocalCustomToolScope(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reader := map[string]any{"name": "peek", "description": "Read-only.", "inputSchema": objectSchema(nil),
		"command": []string{"true"}, "scope": "sandbox:files:read"}
	putManifest(t, dir, "peek.json", reader)
	putManifest(t, dir, "echo.json", echoArgs)
	og := startOAuthGatewayOn(t, startLocalGatewayWith, func(c *gateway.Config) { c.ToolsDir = dir })
	id, secret, err := issuer.AddClient(og.AuthDir, "reader", []string{"sandbox:files:read"})
	if err != nil {
		t.Fatal(err)
	}
	tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {"sandbox:files:read"}}, id+":"+secret)
	if code != http.StatusOK {
		t.Fatalf("token: %d", code)
	}
	c := bearerClient(t, og.URL, tr.AccessToken)
	mustOK(t, "peek", call(t, c, "peek", nil))
	resp := rawMCP(t, og.URL, tr.AccessToken, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo_args","arguments":{"text":"x"}}}`, c.GetSessionId())
	ch, _ := resource.ParseChallenges(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusForbidden || len(ch) == 0 || ch[0].Params["scope"] != "sandbox:exec" {
		t.Fatalf("echo_args without sandbox:exec: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	denied := false
	for _, e := range auditRecords(t, og.AuditPath) {
		denied = denied || e.Tool == "echo_args" && e.Kind == audit.KindToolDenied
	}
	if !denied {
		t.Error("the refused call has no tool.denied record")
	}
}

// TestCustomToolInContainer: a custom tool runs inside the sandbox's
// container, as its unprivileged user, without network.
func TestCustomToolInContainer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putManifest(t, dir, "probe.json", map[string]any{
		"name": "probe", "description": "Who and where am I.", "inputSchema": objectSchema(nil), "scope": "sandbox:exec",
		"outputSchema": objectSchema(map[string]any{"uid": map[string]any{"type": "integer"}, "net": map[string]any{"type": "string"}, "memory_max": map[string]any{"type": "string"}}),
		"command": []string{"python3", "-c", `
import json, os, socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    net = "connected"
except OSError as e:
    net = "refused: %s" % e
mem = "unknown"
for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
    if os.path.exists(path):
        mem = open(path).read().strip()
print(json.dumps({"uid": os.getuid(), "net": net, "memory_max": mem}))
`},
	})
	tg := startGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := legacyClient(t, tg.URL)
	res := mustOK(t, "probe", call(t, c, "probe", nil))
	got := structuredAs[struct {
		UID       int    `json:"uid"`
		Net       string `json:"net"`
		MemoryMax string `json:"memory_max"`
	}](t, res)
	// cgroup v2 says "max", v1 a huge number, when memory is unlimited.
	if mem, err := strconv.ParseInt(got.MemoryMax, 10, 64); got.UID == 0 || !strings.HasPrefix(got.Net, "refused") || err != nil || mem >= 1<<40 {
		t.Errorf("probe in the container: %+v; want a non-root uid, no network and a memory limit", got)
	}
	t.Logf("probe: %+v", got)
}
