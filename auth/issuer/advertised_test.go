package issuer_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// metadataList returns one list member of the authorization server
// metadata, as a client reads it.
func (e *env) metadataList(t *testing.T, name string) []string {
	t.Helper()
	_, body := get(t, http.DefaultClient, e.url+"/.well-known/oauth-authorization-server")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	raw, ok := m[name].([]any)
	if !ok {
		t.Fatalf("metadata has no list %s", name)
	}
	var out []string
	for _, v := range raw {
		out = append(out, v.(string))
	}
	return out
}

// registered is a registration response.
type registered struct {
	client
	Scope string
}

// registerOK registers meta and fails the test unless it succeeds.
func (e *env) registerOK(t *testing.T, meta map[string]any) registered {
	t.Helper()
	status, raw := e.registerRaw(t, meta)
	if status != http.StatusCreated {
		t.Fatalf("register %v: %d %s", meta, status, raw)
	}
	var out struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
		Scope  string `json:"scope"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return registered{client: client{id: out.ID, secret: out.Secret}, Scope: out.Scope}
}

// TestAdvertisedScopes: every scope the metadata lists can be registered
// on its own and then granted; offline_access yields a refresh token that
// refreshes, openid an ID token.
func TestAdvertisedScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, scope := range e.metadataList(t, "scopes_supported") {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			r := e.registerOK(t, map[string]any{"client_name": "scope " + scope, "scope": scope})
			if !slices.Contains(strings.Fields(r.Scope), scope) {
				t.Errorf("registration scope = %q, lacks %s", r.Scope, scope)
			}
			a := newAuthz(r.client)
			a.scope = scope
			tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
			if !slices.Contains(strings.Fields(tok.Scope), scope) {
				t.Errorf("token response scope = %q, lacks %s", tok.Scope, scope)
			}
			switch scope {
			case auth.ScopeOpenID:
				if tok.IDToken == "" {
					t.Error("no ID token for openid")
				}
			case auth.ScopeOfflineAccess:
				next := mustOK(t, e.refresh(t, r.client, tok.RefreshToken, nil))
				if next.RefreshToken == "" || next.RefreshToken == tok.RefreshToken {
					t.Error("refresh did not rotate")
				}
			default:
				if cl, _ := verify(t, tok.AccessToken, e.publicKeys(t)); cl.str("scope") != scope {
					t.Errorf("access token scope = %q, want %s", cl.str("scope"), scope)
				}
			}
		})
	}
}

// TestRegisterWithProtocolScopes registers the way MCP SDKs do (the
// Python SDK adds offline_access to the scopes of the resource), then
// signs in and refreshes.
func TestRegisterWithProtocolScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, scope := range []string{
		strings.Join(auth.AllScopes, " ") + " offline_access",
		"openid offline_access sandbox:exec",
		"offline_access",
	} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			r := e.registerOK(t, map[string]any{"client_name": "MCP SDK", "scope": scope,
				"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
				"token_endpoint_auth_method": "client_secret_post"})
			r.post = true
			a := newAuthz(r.client)
			a.scope = scope
			tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
			if tok.RefreshToken == "" {
				t.Fatal("no refresh token for offline_access")
			}
			next := mustOK(t, e.refresh(t, r.client, tok.RefreshToken, nil))
			cl, _ := verify(t, next.AccessToken, e.publicKeys(t))
			if cl.str("scope") == "" || strings.Contains(cl.str("scope"), "offline_access") {
				t.Errorf("refreshed access token scope = %q: want gateway scopes only", cl.str("scope"))
			}
		})
	}
}

// TestRegisterScopeNotOffered: a scope the server does not advertise is
// refused, naming it and listing what is offered.
func TestRegisterScopeNotOffered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, raw := e.registerRaw(t, map[string]any{"scope": "sandbox:exec email"})
	var out struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	_ = json.Unmarshal(raw, &out)
	if status != http.StatusBadRequest || out.Error != "invalid_client_metadata" ||
		!strings.Contains(out.ErrorDescription, `"email"`) || !strings.Contains(out.ErrorDescription, "offline_access") {
		t.Fatalf("register unknown scope: %d %s", status, raw)
	}
}

// TestAdvertisedAuthMethods: every token endpoint auth method the
// metadata lists can be registered and works at /token and /revoke.
func TestAdvertisedAuthMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	methods := e.metadataList(t, "token_endpoint_auth_methods_supported")
	if got := e.metadataList(t, "revocation_endpoint_auth_methods_supported"); !slices.Equal(got, methods) {
		t.Errorf("revocation auth methods %v differ from token endpoint's %v", got, methods)
	}
	for _, method := range methods {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			r := e.registerOK(t, map[string]any{"token_endpoint_auth_method": method})
			c := r.client
			c.post = method == auth.AuthMethodPost
			if (method == auth.AuthMethodNone) != (c.secret == "") {
				t.Fatalf("method %s: secret issued %t", method, c.secret != "")
			}
			a := newAuthz(c)
			tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
			resp, _ := e.clientPost(t, "/revoke", c, url.Values{"token": {tok.RefreshToken}})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("revoke: %d", resp.StatusCode)
			}
			mustFail(t, e.refresh(t, c, tok.RefreshToken, nil), "invalid_grant")
		})
	}
}

// TestAdvertisedFlows: every response type, response mode and code
// challenge method the metadata lists is accepted, and every grant type
// it lists is served.
func TestAdvertisedFlows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	for _, rt := range e.metadataList(t, "response_types_supported") {
		for _, mode := range e.metadataList(t, "response_modes_supported") {
			for _, method := range e.metadataList(t, "code_challenge_methods_supported") {
				a := newAuthz(c)
				a.method = method
				a.extra = url.Values{"response_type": {rt}, "response_mode": {mode}}
				mustOK(t, e.exchange(t, a, e.code(t, a)))
			}
		}
	}
	for _, grant := range e.metadataList(t, "grant_types_supported") {
		t.Run(grant, func(t *testing.T) {
			t.Parallel()
			switch grant {
			case auth.GrantAuthCode, auth.GrantRefresh:
				a := newAuthz(c)
				tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
				mustOK(t, e.refresh(t, c, tok.RefreshToken, nil))
			case auth.GrantClientCreds:
				id, secret, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec})
				if err != nil {
					t.Fatal(err)
				}
				mustOK(t, e.tokenRequest(t, client{id: id, secret: secret}, url.Values{"grant_type": {grant}}))
			case auth.GrantDeviceCode:
				dc := e.deviceClient(t)
				d := e.mustDevice(t, dc, nil)
				e.deviceSignIn(t, d, true)
				mustOK(t, e.poll(t, dc, d.DeviceCode, nil))
			default:
				t.Errorf("grant type %s is advertised but this test does not know how to run it", grant)
			}
		})
	}
}
