package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
)

// TestOAuthFullFlow walks an MCP client through the whole discovery and
// authorization dance against the embedded authorization server, with
// real HTTP and real forms, then uses the token for tool calls.
func TestOAuthFullFlow(t *testing.T) {
	t.Parallel()
	og := startOAuthGateway(t)
	if err := issuer.AddUser(og.AuthDir, "alice", "correct horse battery", "acme"); err != nil {
		t.Fatal(err)
	}

	// 1. No token: 401 pointing at the resource metadata, no error attribute.
	resp := rawMCP(t, og.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	challenges, err := resource.ParseChallenges(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusUnauthorized || err != nil || len(challenges) == 0 {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	metaURL := challenges[0].Params["resource_metadata"]
	if _, hasErr := challenges[0].Params["error"]; metaURL == "" || hasErr {
		t.Fatalf("401 challenge %+v: want resource_metadata and no error", challenges[0])
	}

	// 2. Resource metadata → authorization server metadata.
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}
	getJSON(t, metaURL, &prm)
	if prm.Resource != og.URL || len(prm.AuthorizationServers) != 1 || prm.BearerMethods[0] != "header" {
		t.Fatalf("protected resource metadata: %+v", prm)
	}
	var asm struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	}
	getJSON(t, prm.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", &asm)
	if asm.Issuer != og.Base || asm.RegistrationEndpoint == "" || len(asm.CodeChallengeMethods) != 1 || asm.CodeChallengeMethods[0] != "S256" {
		t.Fatalf("authorization server metadata: %+v", asm)
	}

	// 3. Dynamic client registration.
	redirect := redirectURI()
	reg, _ := http.Post(asm.RegistrationEndpoint, "application/json", strings.NewReader(`{"client_name":"Test Agent","redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"]}`))
	var regResp struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(reg.Body).Decode(&regResp)
	reg.Body.Close()
	if reg.StatusCode != http.StatusCreated || regResp.ClientID == "" {
		t.Fatalf("registration: %d %+v", reg.StatusCode, regResp)
	}

	// 4. Authorization code with PKCE and resource, through login and consent.
	tokens := authorize(t, og, asm.AuthorizationEndpoint, asm.TokenEndpoint, regResp.ClientID, redirect, "sandbox:exec sandbox:files:read")
	if tokens.RefreshToken == "" {
		t.Fatalf("no refresh token: %+v", tokens)
	}

	// 5. The token works for tools its scopes cover.
	c := bearerClient(t, og.URL, tokens.AccessToken)
	r := structuredAs[execResult](t, mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "echo authorized"})))
	if r.Stdout != "authorized\n" {
		t.Fatalf("run_shell: %+v", r)
	}
	// ... and a tool that needs a scope it lacks is a 403 naming that scope.
	resp = rawMCP(t, og.URL, tokens.AccessToken, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}}`, c.GetSessionId())
	ch, _ := resource.ParseChallenges(resp.Header.Get("WWW-Authenticate"))
	if resp.StatusCode != http.StatusForbidden || len(ch) == 0 || ch[0].Params["error"] != "insufficient_scope" || ch[0].Params["scope"] != "sandbox:files:write" {
		t.Fatalf("missing scope: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// 6. Refresh rotates; the old refresh token is dead.
	refreshed, code := postToken(t, asm.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens.RefreshToken}, "client_id": {regResp.ClientID}}, "")
	if code != http.StatusOK || refreshed.AccessToken == "" || refreshed.RefreshToken == tokens.RefreshToken {
		t.Fatalf("refresh: %d %+v", code, refreshed)
	}
	mustOK(t, "run_shell with the refreshed token", call(t, bearerClient(t, og.URL, refreshed.AccessToken), "run_shell", map[string]any{"command": "true"}))
	if _, code := postToken(t, asm.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tokens.RefreshToken}, "client_id": {regResp.ClientID}}, ""); code == http.StatusOK {
		t.Fatal("a used refresh token was accepted again")
	}

	// 7. A second client identified by a client ID metadata document.
	docSrv := httptest.NewServer(nil)
	defer docSrv.Close()
	docURL := docSrv.URL + "/client.json"
	docSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Metadata Client", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	})
	tokens2 := authorize(t, og, asm.AuthorizationEndpoint, asm.TokenEndpoint, docURL, redirect, "sandbox:exec")
	mustOK(t, "run_shell via the metadata client", call(t, bearerClient(t, og.URL, tokens2.AccessToken), "run_shell", map[string]any{"command": "true"}))
}

// TestOAuthClientCredentials is the CI path: an operator-made client gets a
// token with plain form posts and calls tools.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	id, secret, err := issuer.AddClient(og.AuthDir, "ci", []string{"sandbox:exec", "sandbox:files:read", "sandbox:files:write"})
	if err != nil {
		t.Fatal(err)
	}
	tokenURL := og.tokenEndpoint(t)
	tr, code := postToken(t, tokenURL, url.Values{"grant_type": {"client_credentials"}, "scope": {"sandbox:exec sandbox:files:write"}, "resource": {og.URL}}, id+":"+secret)
	if code != http.StatusOK || tr.AccessToken == "" {
		t.Fatalf("client credentials: %d %+v", code, tr)
	}
	c := modernBearerClient(t, og.URL, tr.AccessToken)
	sid := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"]
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "ci.txt", "content": "ok", "sandbox_id": sid}))
	if _, code := postToken(t, tokenURL, url.Values{"grant_type": {"client_credentials"}}, id+":wrong"); code == http.StatusOK {
		t.Fatal("a wrong client secret got a token")
	}
	if tr, code := postToken(t, tokenURL, url.Values{"grant_type": {"client_credentials"}, "resource": {"https://elsewhere.example/mcp"}}, id+":"+secret); code == http.StatusOK {
		t.Fatalf("a token for a foreign resource was issued: %+v", tr)
	}
}

// TestOAuthPrincipalsAreIsolated: another principal presenting a session id
// or a sandbox_id learns nothing.
func TestOAuthPrincipalsAreIsolated(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	tok := func(name string) string {
		id, secret, err := issuer.AddClient(og.AuthDir, name, []string{"sandbox:exec", "sandbox:files:read"})
		if err != nil {
			t.Fatal(err)
		}
		tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {"sandbox:exec sandbox:files:read"}}, id+":"+secret)
		if code != http.StatusOK {
			t.Fatalf("token for %s: %d %+v", name, code, tr)
		}
		return tr.AccessToken
	}
	alice, mallory := tok("alice"), tok("mallory")
	a := bearerClient(t, og.URL, alice)
	mustOK(t, "run_shell", call(t, a, "run_shell", map[string]any{"command": "echo secret > s"}))
	resp := rawMCP(t, og.URL, mallory, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, a.GetSessionId())
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("mallory with alice's session id: %d", resp.StatusCode)
	}
	am := modernBearerClient(t, og.URL, alice)
	sid := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, am, "sandbox_create", nil)))["sandbox_id"]
	m := modernBearerClient(t, og.URL, mallory)
	res := call(t, m, "read_file", map[string]any{"path": "s", "sandbox_id": sid})
	if !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("mallory with alice's sandbox_id: %q", text(res))
	}
	// No token or a bad one never reaches a tool.
	if resp := rawMCP(t, og.URL, alice+"x", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, ""); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("tampered token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	q, _ := http.NewRequest(http.MethodPost, og.URL+"?access_token="+alice, strings.NewReader(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))
	q.Header.Set("Content-Type", "application/json")
	if resp, _ := http.DefaultClient.Do(q); resp.StatusCode/100 != 4 || resp.StatusCode == http.StatusNotFound {
		t.Fatalf("token in the query string: %d", resp.StatusCode)
	}
	b, _ := readFile(og.AuditPath)
	if strings.Contains(b, alice) || strings.Contains(b, mallory) {
		t.Fatal("a token reached the audit log")
	}
	if logs := og.Logs.String(); strings.Contains(logs, alice) || strings.Contains(logs, mallory) {
		t.Fatal("a token reached the gateway's logs")
	}
	// A browser page on another origin cannot drive the gateway.
	f, _ := http.NewRequest(http.MethodPost, og.URL, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	f.Header.Set("Origin", "https://evil.example")
	f.Header.Set("Authorization", "Bearer "+alice)
	f.Header.Set("Content-Type", "application/json")
	if resp, _ := http.DefaultClient.Do(f); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Origin: %d, want 403", resp.StatusCode)
	}
}

// authorize runs the authorization code flow as a user agent would and
// exchanges the code; it returns the token response.
func authorize(t *testing.T, og *oauthGateway, authzURL, tokenURL, clientID, redirect, scope string) tokenResponse {
	t.Helper()
	verifier, challenge := pkce()
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {scope},
		"state": {"st-123"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {og.URL}}
	br := newBrowser(t, redirect)
	page, err := br.http.Get(authzURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if page.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(page.Body)
		t.Fatalf("authorize: %d %s", page.StatusCode, b)
	}
	consent := br.submit(page, map[string]string{"username": "alice", "password": "correct horse battery"}, "")
	done := br.submit(consent, nil, "approve")
	loc, err := url.Parse(done.Header.Get("Location"))
	if err != nil || done.StatusCode/100 != 3 {
		b, _ := io.ReadAll(done.Body)
		t.Fatalf("after consent: %d %q %s", done.StatusCode, done.Header.Get("Location"), b)
	}
	if loc.Query().Get("state") != "st-123" || loc.Query().Get("iss") != og.Base || loc.Query().Get("code") == "" {
		t.Fatalf("authorization response %s: want code, state and iss (RFC 9207)", loc)
	}
	tr, code := postToken(t, tokenURL, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {og.URL}}, "")
	if code != http.StatusOK || tr.AccessToken == "" {
		t.Fatalf("code exchange: %d %+v", code, tr)
	}
	return tr
}

// rawMCP posts one JSON-RPC message with an optional bearer token and
// session id, for checks a client library would hide.
func rawMCP(t *testing.T, u, token, body, session string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func bearerClient(t *testing.T, u, token string) *client.Client {
	return connectBearer(t, u, token, client.WithProtocolVersion("2025-11-25"))
}

func modernBearerClient(t *testing.T, u, token string) *client.Client {
	return connectBearer(t, u, token)
}

func connectBearer(t *testing.T, u, token string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "sandgate-oauth-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), req); err != nil {
		t.Fatalf("initialize with a bearer token: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
