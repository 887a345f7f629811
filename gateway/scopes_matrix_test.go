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
		name == "sandbox_create", name == "sandbox_info", name == "sandbox_network", name == "sandbox_pause", name == "sandbox_resume",
		name == "sandbox_destroy", name == "sandbox_snapshot", name == "snapshot_list", name == "snapshot_delete", name == "sandbox_fork",
		name == "http_request":
		return auth.ScopeExec
	case strings.HasPrefix(name, "browser_"), name == "matrix_custom":
		return auth.ScopeBrowser
	case name == "audit_log":
		return auth.ScopeAudit
	}
	return ""
}

// scopeRow is one request of the matrix and the scope the documentation
// says it needs.
type scopeRow struct {
	name   string
	legacy bool   // sent on a legacy session (methods 2026-07-28 removed)
	body   string // modernBody, or legacyBody for a legacy row
	need   string // the documented scope; "" for none
	// shown, when set, tells whether the answer holds what only a token
	// of shownWith ("" for any) may see.
	shown     func(probeResult) bool
	shownWith string
	atAck     func() bool // see probe
}

// methodRows are the matrix's rows for every method but tools/call, on
// the sandbox id holding README.md; *fresh is a sandbox that only the
// current subtest's listen may watch.
func methodRows(og *oauthGateway, id string, fresh *string) []scopeRow {
	const template = "sandbox://{sandbox_id}/{+path}"
	fileURI := "sandbox://" + id + "/README.md"
	listen := func(f map[string]any) string {
		return modernBody("subscriptions/listen", map[string]any{"notifications": f})
	}
	complete := func(ref map[string]any, arg, value string, ctx map[string]any) string {
		return modernBody("completion/complete", map[string]any{"ref": ref, "argument": map[string]any{"name": arg, "value": value}, "context": map[string]any{"arguments": ctx}})
	}
	resourceRef := map[string]any{"type": "ref/resource", "uri": template}
	prompt := func(name string) map[string]any { return map[string]any{"type": "ref/prompt", "name": name} }
	contains := func(s string) func(probeResult) bool {
		return func(r probeResult) bool { return strings.Contains(r.body, s) }
	}
	return []scopeRow{
		{name: "tools/list", body: modernBody("tools/list", map[string]any{}), shown: contains(`"matrix_custom"`)},
		{name: "prompts/list", body: modernBody("prompts/list", map[string]any{})},
		{name: "resources/templates/list", body: modernBody("resources/templates/list", map[string]any{})},
		{name: "resources/read sandbox", body: modernBody("resources/read", map[string]any{"uri": fileURI}), need: auth.ScopeFilesRead},
		{name: "resources/read audit", body: modernBody("resources/read", map[string]any{"uri": auditURI}), need: auth.ScopeAudit},
		{name: "resources/subscribe sandbox", legacy: true, body: legacyBody("resources/subscribe", map[string]any{"uri": fileURI}), need: auth.ScopeFilesRead},
		{name: "resources/subscribe audit", legacy: true, body: legacyBody("resources/subscribe", map[string]any{"uri": auditURI}), need: auth.ScopeAudit},
		{name: "subscriptions/listen file", body: listen(map[string]any{"resourceSubscriptions": []string{fileURI}}), need: auth.ScopeFilesRead},
		{name: "subscriptions/listen audit", body: listen(map[string]any{"resourceSubscriptions": []string{auditURI}}), need: auth.ScopeAudit},
		{name: "subscriptions/listen tools", body: listen(map[string]any{"toolsListChanged": true})},
		{name: "completion sandbox path", body: complete(resourceRef, "path", "READ", map[string]any{"sandbox_id": id}), need: auth.ScopeFilesRead},
		{name: "completion sandbox id", body: complete(resourceRef, "sandbox_id", "", nil), need: auth.ScopeFilesRead},
		{name: "completion prompt repo", body: complete(prompt("run-tests"), "repo", "", map[string]any{"sandbox_id": id}), need: auth.ScopeFilesRead},
		{name: "completion prompt sandbox id", body: complete(prompt("debug-command"), "sandbox_id", "", nil)},
		{name: "completion prompt url", body: complete(prompt("capture-page"), "url", "http", nil)},
		{name: "logging/setLevel", legacy: true, body: legacyBody("logging/setLevel", map[string]any{"level": "info"})},
		{name: "ping", legacy: true, body: legacyBody("ping", map[string]any{})},
		// Open to every token, with what needs a scope left out.
		{name: "resources/list files", body: modernBody("resources/list", map[string]any{}), shown: contains(fileURI), shownWith: auth.ScopeFilesRead},
		{name: "resources/list audit", body: modernBody("resources/list", map[string]any{}), shown: contains(auditURI), shownWith: auth.ScopeAudit},
		{name: "prompts/get run-tests README", body: modernBody("prompts/get", map[string]any{"name": "run-tests", "arguments": map[string]any{"sandbox_id": id}}),
			shown: contains("# matrix"), shownWith: auth.ScopeFilesRead},
		// Watching the list of a sandbox made for the subtest, which no
		// stream of an earlier subtest, closing as this one runs, watches.
		{name: "subscriptions/listen workspace", body: listen(map[string]any{"resourcesListChanged": true}),
			atAck: func() bool { return og.gw.WatchSubscribers(*fresh) > 0 }, shown: func(r probeResult) bool { return r.during }, shownWith: auth.ScopeFilesRead},
	}
}

const auditURI = "audit://me/recent"

// toolRows are the matrix's tools/call rows, one per listed tool. Each
// passes an argument no schema declares, so an allowed call is refused
// as invalid arguments before it reaches a sandbox.
func toolRows(t *testing.T, tools []mcp.Tool) []scopeRow {
	var rows []scopeRow
	for _, tool := range tools {
		need := documentedToolScope(tool.Name)
		if need == "" {
			t.Errorf("tool %s has no documented scope: add it to the README's table and documentedToolScope", tool.Name)
			continue
		}
		rows = append(rows, scopeRow{name: "tools/call " + tool.Name, need: need,
			body: modernBody("tools/call", map[string]any{"name": tool.Name, "arguments": map[string]any{"scope_matrix_probe": true}})})
	}
	return rows
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
	tools, err := owner.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var fresh string
	rows := append(methodRows(og, id, &fresh), toolRows(t, tools.Tools)...)
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
					if want := r.shownWith == "" || r.shownWith == scope; r.shown(got) != want {
						t.Errorf("%s with %s: shown %v, want %v; body %s", r.name, scope, !want, want, got.body)
					}
				}
			}
		})
	}
}
