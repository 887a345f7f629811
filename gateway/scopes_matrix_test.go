package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway"
)

// scopeTokens registers one OAuth client holding every scope and returns
// a token of all of them and one token of each single scope. All are the
// same principal (the client), so each may use the sandboxes the others
// made: a request refused is refused for its scope alone.
func scopeTokens(t *testing.T, og *oauthGateway) (all string, single map[string]string) {
	t.Helper()
	id, secret, err := issuer.AddClient(og.AuthDir, "matrix", auth.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	token := func(scopes string) string {
		tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {scopes}}, id+":"+secret)
		if code != http.StatusOK || tr.AccessToken == "" {
			t.Fatalf("token for %q: %d", scopes, code)
		}
		return tr.AccessToken
	}
	single = map[string]string{}
	for _, s := range auth.AllScopes {
		single[s] = token(s)
	}
	return token(strings.Join(auth.AllScopes, " ")), single
}

// probeResult is what probe saw of one request.
type probeResult struct {
	status int
	scope  string // the scope the 403's challenge names
	body   string // the response body; for a stream, up to its first notification
	during bool   // what probe's atAck reported while the stream was open
}

// probe POSTs one JSON-RPC message as token (on session, when not "") and
// reads the answer. A stream (subscriptions/listen) is read up to its
// notifications/subscriptions/acknowledged, which mcp-go sends after the
// gateway's listen hook has subscribed it; atAck (if not nil) runs then,
// while the stream is open, and the stream is closed.
func probe(t *testing.T, u, token, session, body string, atAck func() bool) probeResult {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	} else {
		setModernHeaders(t, req, body)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := probeResult{status: resp.StatusCode}
	if ch, _ := resource.ParseChallenges(resp.Header.Get("WWW-Authenticate")); len(ch) > 0 {
		r.scope = ch[0].Params["scope"]
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), string(mcp.MethodNotificationSubscriptionsAcknowledged)) {
			if atAck != nil {
				r.during = atAck()
			}
			break
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		t.Fatalf("read response: %v", err)
	}
	r.body = b.String()
	return r
}

// setModernHeaders sets the headers 2026-07-28 requires beside the body:
// the version, Mcp-Method and, for the methods that name something,
// Mcp-Name.
func setModernHeaders(t *testing.T, req *http.Request, body string) {
	t.Helper()
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set(mcp.HeaderMethod, m.Method)
	if name, ok := mcp.ExtractHeaderName(mcp.MCPMethod(m.Method), m.Params); ok {
		v, _ := mcp.EncodeHeaderValue(name)
		req.Header.Set(mcp.HeaderName, v)
	}
}

// modernBody is a 2026-07-28 request of method with params.
func modernBody(method string, params map[string]any) string {
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "matrix", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return string(b)
}

// legacyBody is a 2025-11-25 request of method with params.
func legacyBody(method string, params map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return string(b)
}

// documentedToolScope is the README's table of the scope each tool needs
// ("Authentication"), plus the custom tool's manifest scope. A tool this
// does not know fails TestLocalScopeMatrix: document its scope first.
func documentedToolScope(name string) string {
	switch {
	case name == "read_file", name == "list_directory", name == "file_info", name == "search_files", name == "search_code":
		return auth.ScopeFilesRead
	case name == "write_file", name == "edit_file", name == "make_directory", name == "move_path", name == "remove_path":
		return auth.ScopeFilesWrite
	case name == "run_shell", name == "run_code", name == "interpreter_restart", name == "run_notebook", strings.HasPrefix(name, "process_"),
		name == "sandbox_create", name == "sandbox_info", name == "sandbox_network", name == "sandbox_destroy", name == "http_request":
		return auth.ScopeExec
	case strings.HasPrefix(name, "browser_"), name == "matrix_custom":
		return auth.ScopeBrowser
	case name == "audit_log":
		return auth.ScopeAudit
	}
	return ""
}

// TestLocalScopeMatrix calls every MCP method the gateway serves, and
// every tool, with a token of each single scope, and checks the answer
// against the documented matrix (README, "Authentication"): a method that
// needs a scope the token lacks is 403 naming that scope, anything else
// is answered, and what a list shows without a scope is left out.
func TestLocalScopeMatrix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putManifest(t, dir, "custom.json", map[string]any{"name": "matrix_custom", "description": "A custom tool.",
		"inputSchema": objectSchema(nil), "command": []string{"true"}, "scope": auth.ScopeBrowser})
	og := startOAuthGatewayOn(t, startLocalGatewayWith, func(c *gateway.Config) { c.ToolsDir = dir })
	all, single := scopeTokens(t, og)
	owner := modernBearerClient(t, og.URL, all)
	id := newSandboxID(t, owner)
	write(t, owner, id, "README.md", "# matrix\n", "")
	fileURI := "sandbox://" + id + "/README.md"
	var fresh string // a sandbox made in each subtest

	tools, err := owner.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name   string
		legacy bool   // sent on a legacy session (methods 2026-07-28 removed)
		body   string // for a legacy row, legacyBody
		need   string // the documented scope; "" for none
		shown  func(probeResult) bool
		atAck  func() bool // see probe
	}
	rows := []row{
		{name: "tools/list", body: modernBody("tools/list", map[string]any{}),
			shown: func(r probeResult) bool { return strings.Contains(r.body, `"matrix_custom"`) && strings.Contains(r.body, `"audit_log"`) }},
		{name: "prompts/list", body: modernBody("prompts/list", map[string]any{})},
		{name: "resources/templates/list", body: modernBody("resources/templates/list", map[string]any{})},
		{name: "resources/read sandbox", body: modernBody("resources/read", map[string]any{"uri": fileURI}), need: auth.ScopeFilesRead},
		{name: "resources/read audit", body: modernBody("resources/read", map[string]any{"uri": "audit://me/recent"}), need: auth.ScopeAudit},
		{name: "resources/subscribe sandbox", legacy: true, body: legacyBody("resources/subscribe", map[string]any{"uri": fileURI}), need: auth.ScopeFilesRead},
		{name: "resources/subscribe audit", legacy: true, body: legacyBody("resources/subscribe", map[string]any{"uri": "audit://me/recent"}), need: auth.ScopeAudit},
		{name: "subscriptions/listen file", body: modernBody("subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{fileURI}}}), need: auth.ScopeFilesRead},
		{name: "subscriptions/listen audit", body: modernBody("subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{"audit://me/recent"}}}), need: auth.ScopeAudit},
		{name: "subscriptions/listen tools", body: modernBody("subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})},
		{name: "completion sandbox path", body: modernBody("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "sandbox://{sandbox_id}/{+path}"},
			"argument": map[string]any{"name": "path", "value": "READ"}, "context": map[string]any{"arguments": map[string]any{"sandbox_id": id}}}), need: auth.ScopeFilesRead},
		{name: "completion sandbox id", body: modernBody("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": "sandbox://{sandbox_id}/{+path}"},
			"argument": map[string]any{"name": "sandbox_id", "value": ""}}), need: auth.ScopeFilesRead},
		{name: "completion prompt repo", body: modernBody("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "run-tests"},
			"argument": map[string]any{"name": "repo", "value": ""}, "context": map[string]any{"arguments": map[string]any{"sandbox_id": id}}}), need: auth.ScopeFilesRead},
		{name: "completion prompt sandbox id", body: modernBody("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "debug-command"},
			"argument": map[string]any{"name": "sandbox_id", "value": ""}})},
		{name: "completion prompt url", body: modernBody("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "capture-page"},
			"argument": map[string]any{"name": "url", "value": "http"}})},
		{name: "logging/setLevel", legacy: true, body: legacyBody("logging/setLevel", map[string]any{"level": "info"})},
		{name: "ping", legacy: true, body: legacyBody("ping", map[string]any{})},
		// Open to every token, with what needs a scope left out.
		{name: "resources/list files", body: modernBody("resources/list", map[string]any{}),
			shown: func(r probeResult) bool { return strings.Contains(r.body, fileURI) }},
		{name: "resources/list audit", body: modernBody("resources/list", map[string]any{}),
			shown: func(r probeResult) bool { return strings.Contains(r.body, "audit://me/recent") }},
		{name: "prompts/get run-tests README", body: modernBody("prompts/get", map[string]any{"name": "run-tests", "arguments": map[string]any{"sandbox_id": id}}),
			shown: func(r probeResult) bool { return strings.Contains(r.body, "# matrix") }},
		// Watching the list of a sandbox made for the subtest, which no
		// stream of an earlier subtest, closing as this one runs, watches.
		{name: "subscriptions/listen workspace", body: modernBody("subscriptions/listen", map[string]any{"notifications": map[string]any{"resourcesListChanged": true}}),
			atAck: func() bool { return og.gw.WatchSubscribers(fresh) > 0 }, shown: func(r probeResult) bool { return r.during }},
	}
	shownWith := map[string]string{"resources/list files": auth.ScopeFilesRead, "resources/list audit": auth.ScopeAudit,
		"prompts/get run-tests README": auth.ScopeFilesRead, "subscriptions/listen workspace": auth.ScopeFilesRead, "tools/list": ""}
	for _, tool := range tools.Tools {
		need := documentedToolScope(tool.Name)
		if need == "" {
			t.Errorf("tool %s has no documented scope: add it to the README's table and documentedToolScope", tool.Name)
			continue
		}
		// An argument no schema declares: an allowed call is refused as
		// invalid arguments before it reaches a sandbox.
		rows = append(rows, row{name: "tools/call " + tool.Name, need: need,
			body: modernBody("tools/call", map[string]any{"name": tool.Name, "arguments": map[string]any{"scope_matrix_probe": true}})})
	}

	for _, scope := range auth.AllScopes {
		t.Run(scope, func(t *testing.T) {
			session := bearerClient(t, og.URL, single[scope]).GetSessionId()
			fresh = newSandboxID(t, owner)
			for _, r := range rows {
				s := ""
				if r.legacy {
					s = session
				}
				got := probe(t, og.URL, single[scope], s, r.body, r.atAck)
				denied := r.need != "" && r.need != scope
				switch {
				case denied && (got.status != http.StatusForbidden || got.scope != r.need):
					t.Errorf("%s with %s: %d, scope %q; want 403 naming %s", r.name, scope, got.status, got.scope, r.need)
				case !denied && got.status != http.StatusOK:
					t.Errorf("%s with %s: %d %s; want it answered", r.name, scope, got.status, got.body)
				case !denied && r.shown != nil:
					want := shownWith[r.name] == "" || shownWith[r.name] == scope
					if r.shown(got) != want {
						t.Errorf("%s with %s: shown %v, want %v; body %s", r.name, scope, !want, want, got.body)
					}
				}
			}
		})
	}
}
