package gateway_test

// Gateway logic that needs no container, on the in-process provider
// (sandboxtest.Local): these run in -short mode, in seconds. The same
// behaviour end to end against Docker is in the e2e_* and hostile_* tests.

import (
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// TestLocalScopes: a token without a tool's scope gets 403 naming it, and
// the refusal reaches no sandbox.
func TestLocalScopes(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	id, secret, err := issuer.AddClient(og.AuthDir, "reader", []string{"sandbox:files:read"})
	if err != nil {
		t.Fatal(err)
	}
	tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {"sandbox:files:read"}}, id+":"+secret)
	if code != http.StatusOK {
		t.Fatalf("token: %d", code)
	}
	c := bearerClient(t, og.URL, tr.AccessToken)
	resp := rawMCP(t, og.URL, tr.AccessToken, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":"true"}}}`, c.GetSessionId())
	ch, _ := resource.ParseChallenges(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusForbidden || len(ch) == 0 || ch[0].Params["error"] != "insufficient_scope" || ch[0].Params["scope"] != "sandbox:exec" {
		t.Fatalf("run_shell without sandbox:exec: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if infos, _ := og.Local.List(t.Context(), sandbox.Filter{}); len(infos) != 0 {
		t.Fatalf("a refused call made sandboxes: %+v", infos)
	}
}

// TestLocalAuditFraming: a call leaves tool.start before and tool.end
// after, with the same request id and argument digest and no payload; a
// call with bad arguments leaves tool.denied; the chain verifies.
func TestLocalAuditFraming(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	args := map[string]any{"path": "secret.txt", "content": "the payload"}
	mustOK(t, "write_file", call(t, c, "write_file", args))
	if res := call(t, c, "read_file", map[string]any{"path": 42}); !res.IsError {
		t.Fatalf("read_file with a number for path: %s", text(res))
	}
	var start, end, denied *audit.Event
	recs := auditRecords(t, tg.AuditPath)
	for i := range recs {
		switch e := &recs[i]; {
		case e.Kind == audit.KindToolStart && e.Tool == "write_file":
			start = e
		case e.Kind == audit.KindToolEnd && e.Tool == "write_file":
			end = e
		case e.Kind == audit.KindToolDenied && e.Tool == "read_file":
			denied = e
		}
	}
	if start == nil || end == nil || denied == nil {
		t.Fatalf("records: start %v, end %v, denied %v", start, end, denied)
	}
	if start.RequestID == "" || start.RequestID != end.RequestID || start.ArgsDigest != audit.Digest(args) || end.ArgsDigest != start.ArgsDigest ||
		end.Outcome != audit.OutcomeOK || start.SandboxID == "" || end.SandboxID != start.SandboxID {
		t.Errorf("start %+v and end %+v do not frame one call", start, end)
	}
	if denied.Outcome != audit.OutcomeDenied || denied.DenyReason != "invalid arguments" {
		t.Errorf("denied record: %+v", denied)
	}
	if raw, _ := os.ReadFile(tg.AuditPath); strings.Contains(string(raw), "the payload") {
		t.Error("file content reached the audit log")
	}
	if rep, err := audit.VerifyFile(tg.AuditPath); err != nil || !rep.OK() {
		t.Errorf("audit chain: %+v %v", rep, err)
	}
}

// TestLocalQuotas: a tenant's sandbox count and call rate are bounded,
// with errors that say what to do.
func TestLocalQuotas(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.MaxSandboxesPerTenant, c.ToolCallsPerMinute = 2, 6 })
	c := modernClient(t, tg.URL)
	createSandbox(t, c)
	createSandbox(t, c)
	res := call(t, c, "sandbox_create", nil)
	if !res.IsError || !strings.Contains(text(res), "limit 2") || !strings.Contains(text(res), "sandbox_destroy") {
		t.Fatalf("third sandbox: %q", text(res))
	}
	for range 3 {
		call(t, c, "audit_log", nil)
	}
	if res := call(t, c, "audit_log", nil); !res.IsError || !strings.Contains(text(res), "rate limit") {
		t.Fatalf("seventh call in a minute: %q", text(res))
	}
}

// TestLocalSessionBinding: a sandbox that belongs to one legacy session is
// "not found" from another, even by its id.
func TestLocalSessionBinding(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	a, b := legacyClient(t, tg.URL), legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, a, "write_file", map[string]any{"path": "mine", "content": "a"}))
	infos, err := tg.Local.List(t.Context(), sandbox.Filter{Session: a.GetSessionId()})
	if err != nil || len(infos) != 1 {
		t.Fatalf("session a's sandbox: %+v %v", infos, err)
	}
	res := call(t, b, "read_file", map[string]any{"path": "mine", "sandbox_id": infos[0].ID})
	if !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("session b reading session a's sandbox by id: %q", text(res))
	}
}

// TestLocalDeadRunnerReplaced: a runner that dies is replaced on the
// session's next call, on the same workspace, and the result says so.
func TestLocalDeadRunnerReplaced(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "kept", "content": "x"}))
	id := onlySandbox(t, tg)
	if err := tg.Local.Kill(id); err != nil {
		t.Fatal(err)
	}
	res := mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "kept"}))
	if got := allText(res); text(res) != "x" || !strings.Contains(got, "died") || !strings.Contains(got, "/workspace was kept") {
		t.Fatalf("after the runner died: %q", got)
	}
	if m, _ := res.Meta.GetMetaField("sandgate.dev/sandbox-replaced").(map[string]any); m["sandbox_id"] != id || m["workspace_kept"] != true {
		t.Errorf("_meta of the call in the replacement: %v", m)
	}
}

// TestLocalStoppedRunnerReplaced: a stopped runner (SIGSTOP) fails the
// call in flight with "stopped answering" and is replaced on the next.
func TestLocalStoppedRunnerReplaced(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "kept", "content": "x"}))
	id := onlySandbox(t, tg)
	if err := tg.Local.Stop(id); err != nil {
		t.Fatal(err)
	}
	if res := call(t, c, "read_file", map[string]any{"path": "kept"}); !res.IsError || !strings.Contains(text(res), "stopped answering") {
		t.Fatalf("call on a stopped runner: %q", text(res))
	}
	res := mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "kept"}))
	if got := allText(res); text(res) != "x" || !strings.Contains(got, "stopped answering") {
		t.Fatalf("next call: %q", got)
	}
}

// TestLocalCallTimeout: a command past its timeout is killed, flagged and
// audited as a timeout.
func TestLocalCallTimeout(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.Limits.CallTimeout = 2 * time.Second })
	c := legacyClient(t, tg.URL)
	r, res := shell(t, c, "sleep 30", nil)
	if !res.IsError || !r.TimedOut || !strings.Contains(r.Message, "timed out after 2s") {
		t.Fatalf("sleep past the call timeout: %+v", r)
	}
	if end := lastToolEnd(t, tg, c.GetSessionId()); end.Outcome != audit.OutcomeTimeout {
		t.Fatalf("tool.end outcome %q, want timeout", end.Outcome)
	}
}

// TestLocalListDirectoryDefault: list_directory without a path lists the
// sandbox's own workspace, as its runner resolves it, not a /workspace
// the gateway names (here that would be the host's).
func TestLocalListDirectoryDefault(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "listed.txt", "content": "x"}))
	if got := text(mustOK(t, "list_directory", call(t, c, "list_directory", nil))); !strings.Contains(got, tg.Local.Workspace(onlySandbox(t, tg))+"/listed.txt") {
		t.Fatalf("list_directory without a path: %q; want the sandbox's workspace with listed.txt", got)
	}
}

// onlySandbox returns the id of the one sandbox tg has.
func onlySandbox(t *testing.T, tg *testGateway) string {
	t.Helper()
	infos, err := tg.Local.List(t.Context(), sandbox.Filter{})
	if err != nil || len(infos) != 1 {
		t.Fatalf("sandboxes: %+v %v, want one", infos, err)
	}
	return infos[0].ID
}
