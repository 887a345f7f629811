package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/apikey"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// e2bKeyGateway is a gateway with OAuth on, whose E2B API also takes
// keys from an apikey.Store, as cmd/gateway wires it.
func e2bKeyGateway(t *testing.T) (*oauthGateway, *apikey.Store) {
	t.Helper()
	return e2bKeyGatewayOn(t, startLocalGatewayWith)
}

// e2bKeyGatewayOn is e2bKeyGateway on the provider start chooses.
func e2bKeyGatewayOn(t *testing.T, start func(testing.TB, net.Listener, func(*gateway.Config)) *testGateway) (*oauthGateway, *apikey.Store) {
	t.Helper()
	keys, err := apikey.Open(filepath.Join(t.TempDir(), "apikeys.json"))
	if err != nil {
		t.Fatal(err)
	}
	og := startOAuthGatewayOn(t, start, func(c *gateway.Config) {
		c.E2B.UseAPIKeys(keys)
	})
	return og, keys
}

// e2bCall sends one control-plane request with the given headers and
// decodes a JSON answer into out (when not nil).
func e2bCall(t *testing.T, method, u string, header map[string]string, body any, out any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, u, resp.StatusCode, raw, err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp
}

type e2bCreated struct {
	SandboxID       string `json:"sandboxID"`
	TemplateID      string `json:"templateID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
}

type e2bListed struct {
	SandboxID  string            `json:"sandboxID"`
	TemplateID string            `json:"templateID"`
	StartedAt  time.Time         `json:"startedAt"`
	EndAt      time.Time         `json:"endAt"`
	Metadata   map[string]string `json:"metadata"`
	Network    struct {
		AllowOut []string `json:"allowOut"`
	} `json:"network"`
}

// TestLocalE2BControlPlane: keys of two tenants; one creates, lists,
// times out and kills a sandbox, the other can see and touch none of it;
// bad credentials get 401 and unsupported features 400, each saying
// why; every call is in the audit log under the key's identity.
func TestLocalE2BControlPlane(t *testing.T) {
	t.Parallel()
	og, keys := e2bKeyGateway(t)
	keyA, recA, err := keys.Add("ci", "tenant-a", []string{auth.ScopeExec, auth.ScopeFilesRead, auth.ScopeFilesWrite})
	if err != nil {
		t.Fatal(err)
	}
	keyB, _, err := keys.Add("other", "tenant-b", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	a, b := map[string]string{"X-API-KEY": keyA}, map[string]string{"X-API-KEY": keyB}

	var made e2bCreated
	resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes", a, map[string]any{"templateID": "base", "timeout": 300, "metadata": map[string]string{"job": "42"}}, &made)
	if resp.StatusCode != http.StatusCreated || made.SandboxID == "" || made.EnvdAccessToken == "" || made.EnvdVersion == "" || made.TemplateID != "base" {
		t.Fatalf("create: %d %+v", resp.StatusCode, made)
	}
	id := made.SandboxID
	var got e2bListed
	if resp := e2bCall(t, "GET", og.Base+"/sandboxes/"+id, a, nil, &got); resp.StatusCode != http.StatusOK || got.Metadata["job"] != "42" {
		t.Fatalf("get: %d %+v", resp.StatusCode, got)
	}
	if resp := e2bCall(t, "GET", og.Base+"/sandboxes/"+id, b, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's get: %d, want 404", resp.StatusCode)
	}
	for _, h := range []map[string]string{b, a} {
		var page []e2bListed
		e2bCall(t, "GET", og.Base+"/v2/sandboxes?metadata="+url.QueryEscape("job=42"), h, nil, &page)
		if want := h["X-API-KEY"] == keyA; (len(page) == 1 && page[0].SandboxID == id) != want {
			t.Fatalf("list as %s: %+v", h["X-API-KEY"][:8], page)
		}
	}
	before := time.Now()
	if resp := e2bCall(t, "POST", og.Base+"/sandboxes/"+id+"/timeout", a, map[string]any{"timeout": 30}, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("timeout: %d", resp.StatusCode)
	}
	e2bCall(t, "GET", og.Base+"/sandboxes/"+id, a, nil, &got)
	if got.EndAt.Before(before.Add(29*time.Second)) || got.EndAt.After(time.Now().Add(31*time.Second)) {
		t.Fatalf("endAt %v after a 30 s timeout set at %v", got.EndAt, before)
	}

	for _, c := range []struct {
		name   string
		method string
		path   string
		header map[string]string
		body   any
		status int
		says   string
	}{
		{"no key", "GET", "/v2/sandboxes", nil, nil, 401, "X-API-KEY"},
		{"wrong key", "GET", "/v2/sandboxes", map[string]string{"X-API-KEY": "e2b_" + strings.Repeat("0", 40)}, nil, 401, "apikey add"},
		{"pause keeping memory", "POST", "/sandboxes/" + id + "/pause", a, map[string]any{"memory": true}, 400, "gVisor"},
		{"pause as another tenant", "POST", "/sandboxes/" + id + "/pause", b, nil, 404, "not found"},
		{"connect as another tenant", "POST", "/sandboxes/" + id + "/connect", b, nil, 404, "not found"},
		{"list by an unknown state", "GET", "/v2/sandboxes?state=hibernating", a, nil, 400, `"running", "paused"`},
		{"template build", "POST", "/v3/templates", a, nil, 400, "templates"},
		{"unknown template", "POST", "/v2/sandboxes", a, map[string]any{"templateID": "nope"}, 400, "code-interpreter-v1"},
		{"env at create", "POST", "/v2/sandboxes", a, map[string]any{"envVars": map[string]string{"A": "1"}}, 400, "envs to each command"},
		{"metadata too long", "POST", "/v2/sandboxes", a, map[string]any{"metadata": map[string]string{"k": strings.Repeat("v", 513)}}, 400, "at most 512 bytes"},
		{"deny list", "PUT", "/sandboxes/" + id + "/network", a, map[string]any{"denyOut": []string{"10.0.0.0/8"}}, 400, "denyOut"},
		{"network beyond ceiling", "PUT", "/sandboxes/" + id + "/network", a, map[string]any{"allowOut": []string{"example.com"}}, 400, "operator allows"},
		{"kill as another tenant", "DELETE", "/sandboxes/" + id, b, nil, 404, "not found"},
	} {
		var e struct {
			Message string `json:"message"`
		}
		resp := e2bCall(t, c.method, og.Base+c.path, c.header, c.body, &e)
		if resp.StatusCode != c.status || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, resp.StatusCode, e.Message, c.status, c.says)
		}
	}

	if resp := e2bCall(t, "DELETE", og.Base+"/sandboxes/"+id, a, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("kill: %d", resp.StatusCode)
	}
	if resp := e2bCall(t, "GET", og.Base+"/sandboxes/"+id, a, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("get after kill: %d", resp.StatusCode)
	}
	var tools []string
	for _, ev := range auditRecords(t, og.AuditPath) {
		if ev.Kind == audit.KindToolEnd && ev.Principal.Issuer == apikey.Issuer && ev.Principal.Subject == recA.ID {
			tools = append(tools, ev.Tool)
		}
	}
	for _, want := range []string{"e2b.sandbox.create", "e2b.sandbox.get", "e2b.sandbox.list", "e2b.sandbox.timeout", "e2b.sandbox.kill"} {
		if !slices.Contains(tools, want) {
			t.Errorf("no %s record under key %s; have %v", want, recA.ID, tools)
		}
	}
}

// TestLocalE2BSameSandboxFromMCP: an OAuth token works on the E2B API
// too, and a sandbox it creates there is the same sandbox over MCP.
func TestLocalE2BSameSandboxFromMCP(t *testing.T) {
	t.Parallel()
	og, _ := e2bKeyGateway(t)
	id, secret, err := issuer.AddClient(og.AuthDir, "both", auth.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(auth.AllScopes, " ")}}, id+":"+secret)
	if code != http.StatusOK {
		t.Fatalf("token: %d", code)
	}
	bearer := map[string]string{"Authorization": "Bearer " + tr.AccessToken}
	var made e2bCreated
	if resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes", bearer, map[string]any{"templateID": "base"}, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create with a bearer token: %d", resp.StatusCode)
	}
	// A sessionless (2026-07-28) client: a legacy session's own sandboxes
	// belong to that session alone.
	c := modernBearerClient(t, og.URL, tr.AccessToken)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": made.SandboxID, "path": "from-mcp.txt", "content": "hello"}))
	info := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", map[string]any{"sandbox_id": made.SandboxID})))
	if info["sandbox_id"] != made.SandboxID {
		t.Fatalf("sandbox_info over MCP: %v", info)
	}
	var page []e2bListed
	e2bCall(t, "GET", og.Base+"/v2/sandboxes", bearer, nil, &page)
	if len(page) != 1 || page[0].SandboxID != made.SandboxID {
		t.Fatalf("list with the bearer token: %+v", page)
	}

	// The reverse: sandbox_create over MCP, then the E2B API's connect
	// and its data plane read what MCP wrote.
	mcpMade := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", map[string]any{})))
	mcpID, _ := mcpMade["sandbox_id"].(string)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": mcpID, "path": "note.txt", "content": "written over MCP"}))
	var conn e2bCreated
	if resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes/"+mcpID+"/connect", bearer, map[string]any{"timeout": 300}, &conn); resp.StatusCode != http.StatusOK || conn.EnvdAccessToken == "" {
		t.Fatalf("connect to the MCP sandbox: %d %+v", resp.StatusCode, conn)
	}
	resp := e2bCall(t, "GET", og.Base+"/files?path=note.txt", map[string]string{"E2b-Sandbox-Id": mcpID, "E2b-Sandbox-Port": "49983", "X-Access-Token": conn.EnvdAccessToken}, nil, nil)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "written over MCP" {
		t.Fatalf("download through the data plane: %d %q", resp.StatusCode, b)
	}
}

// TestLocalE2BTimeoutEnds: a sandbox whose timeout passes is removed at
// once (not at the next sweep, half a minute later by default), and the
// audit log says why.
func TestLocalE2BTimeoutEnds(t *testing.T) {
	t.Parallel()
	og, keys := e2bKeyGateway(t)
	key, _, err := keys.Add("ci", "tenant-a", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"X-API-KEY": key}
	var made e2bCreated
	if resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes", h, map[string]any{"timeout": 1}, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	// The sweep runs every 30 s with the default idle TTL: well within
	// that, the deadline's own timer must have removed it.
	deadline := time.Now().Add(20 * time.Second)
	for e2bCall(t, "GET", og.Base+"/sandboxes/"+made.SandboxID, h, nil, nil).StatusCode != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("sandbox still there 20 s after its 1 s timeout")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The sandbox stops answering before its destroy record is written
	// (destroy untracks it first), so the record may come a moment later.
	deadline = time.Now().Add(20 * time.Second)
	for {
		for _, ev := range auditRecords(t, og.AuditPath) {
			if ev.Kind == audit.KindSandboxDestroy && ev.SandboxID == made.SandboxID {
				if ev.Summary["reason"] != "timeout set by its owner" {
					t.Fatalf("destroyed for %q", ev.Summary["reason"])
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no sandbox.destroy record")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLocalE2BRevokedKey: a revoked key stops working at once, on a
// gateway that was running when the CLI revoked it.
func TestLocalE2BRevokedKey(t *testing.T) {
	t.Parallel()
	og, keys := e2bKeyGateway(t)
	key, rec, err := keys.Add("ci", "tenant-a", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"X-API-KEY": key}
	if resp := e2bCall(t, "GET", og.Base+"/v2/sandboxes", h, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("list with a live key: %d", resp.StatusCode)
	}
	// Another Store on the same file stands for `gateway apikey revoke`.
	cli, err := apikey.Open(keys.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Revoke(rec.ID); err != nil {
		t.Fatal(err)
	}
	if resp := e2bCall(t, "GET", og.Base+"/v2/sandboxes", h, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("list with a revoked key: %d, want 401", resp.StatusCode)
	}
}

// TestLocalE2BNetwork: allowOut within the tenant's ceiling becomes the
// sandbox's allowlist, at create and by update, and shows in its info.
func TestLocalE2BNetwork(t *testing.T) {
	t.Parallel()
	ceiling, err := policy.ParseRules([]string{"*.example.com:443", "example.org"})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikey.Open(filepath.Join(t.TempDir(), "apikeys.json"))
	if err != nil {
		t.Fatal(err)
	}
	og := startOAuthGatewayOn(t, startLocalGatewayWith, func(c *gateway.Config) {
		c.Egress.Policy = egress.Tenants{Deployment: egress.TenantPolicy{Ceiling: ceiling}}
		c.E2B.APIKey = func(key string) (identity.Identity, error) {
			rec, err := keys.Lookup(key)
			return rec.Identity(), err
		}
	})
	key, _, err := keys.Add("ci", "tenant-a", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"X-API-KEY": key}
	var made e2bCreated
	body := map[string]any{"network": map[string]any{"allowOut": []string{"api.example.com:443"}, "denyOut": []string{"0.0.0.0/0"}}}
	if resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes", h, body, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create with allowOut: %d", resp.StatusCode)
	}
	var got e2bListed
	e2bCall(t, "GET", og.Base+"/sandboxes/"+made.SandboxID, h, nil, &got)
	if !slices.Equal(got.Network.AllowOut, []string{"api.example.com:443"}) {
		t.Fatalf("allowOut after create: %v", got.Network.AllowOut)
	}
	if resp := e2bCall(t, "PUT", og.Base+"/sandboxes/"+made.SandboxID+"/network", h, map[string]any{"allowOut": []string{"example.org"}}, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("update: %d", resp.StatusCode)
	}
	e2bCall(t, "GET", og.Base+"/sandboxes/"+made.SandboxID, h, nil, &got)
	if !slices.Equal(got.Network.AllowOut, []string{"example.org"}) {
		t.Fatalf("allowOut after update: %v", got.Network.AllowOut)
	}
}
