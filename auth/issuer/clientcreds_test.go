package issuer_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
	"github.com/sandgate/sandgate/auth/issuer"
)

// TestClientCredentials: a client made by AddClient while the server runs
// gets tokens for itself, limited to its scopes.
func TestClientCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec, auth.ScopeFilesRead})
	if err != nil {
		t.Fatal(err)
	}
	c := client{id: id, secret: secret}
	cc := func(extra url.Values) url.Values {
		form := url.Values{"grant_type": {"client_credentials"}}
		for k, v := range extra {
			form[k] = v
		}
		return form
	}

	tok := mustOK(t, e.tokenRequest(t, c, cc(nil)))
	if tok.RefreshToken != "" || tok.IDToken != "" {
		t.Error("client_credentials returned a refresh or ID token")
	}
	cl, _ := verify(t, tok.AccessToken, e.publicKeys(t))
	if cl.str("sub") != id || cl.str("tenant") != id || cl.str("client_id") != id {
		t.Errorf("sub %q tenant %q client_id %q, want the client ID", cl.str("sub"), cl.str("tenant"), cl.str("client_id"))
	}
	if got := strings.Fields(cl.str("scope")); !slices.Equal(got, []string{auth.ScopeExec, auth.ScopeFilesRead}) {
		t.Errorf("scope = %v", got)
	}
	if !slices.Equal(cl.aud(), []string{e.resource()}) {
		t.Errorf("aud = %v, want the default resource", cl.aud())
	}

	tok = mustOK(t, e.tokenRequest(t, c, cc(url.Values{"scope": {auth.ScopeExec}, "resource": {e.url + "/other"}})))
	cl, _ = verify(t, tok.AccessToken, e.publicKeys(t))
	if cl.str("scope") != auth.ScopeExec || !slices.Equal(cl.aud(), []string{e.url + "/other"}) {
		t.Errorf("narrowed: scope %q aud %v", cl.str("scope"), cl.aud())
	}

	mustFail(t, e.tokenRequest(t, c, cc(url.Values{"scope": {auth.ScopeAudit}})), "invalid_scope")
	mustFail(t, e.tokenRequest(t, c, cc(url.Values{"resource": {"https://evil.example/mcp"}})), "invalid_target")

	// client_secret_post works too.
	post := cc(url.Values{"client_id": {id}, "client_secret": {secret}})
	mustOK(t, e.tokenRequest(t, client{}, post))

	wrong := e.tokenRequest(t, client{id: id, secret: "wrong"}, cc(nil))
	mustFail(t, wrong, "invalid_client")
	if wrong.Status != http.StatusUnauthorized {
		t.Errorf("wrong secret: status %d, want 401", wrong.Status)
	}
}

// TestClientCredentialsOnlyStatic: a self-registered client cannot mint
// user-less tokens. The registration handler refuses the grant; should a
// record with it reach the store anyway, the token endpoint still does.
func TestClientCredentialsOnlyStatic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	status, _ := e.registerRaw(t, map[string]any{"token_endpoint_auth_method": auth.AuthMethodBasic,
		"grant_types": []string{auth.GrantClientCreds}})
	if status != http.StatusBadRequest {
		t.Errorf("registering client_credentials: %d, want 400", status)
	}
	secret := "a-long-random-secret-for-this-test"
	hash, err := clients.HashSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	rec := auth.ClientRecord{ID: "dyn-cc", Kind: auth.ClientDynamic, SecretHash: hash,
		GrantTypes: []string{auth.GrantClientCreds}, AuthMethod: auth.AuthMethodBasic, Scopes: []string{auth.ScopeExec}}
	if err := (*e.store.Load()).PutClient(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	r := e.tokenRequest(t, client{id: rec.ID, secret: secret}, url.Values{"grant_type": {"client_credentials"}})
	if r.Status == http.StatusOK {
		t.Fatal("a dynamic client got a client_credentials token")
	}
}

// TestClientCredentialsScopeIntersection: asking for more than the client
// holds (the MCP Python SDK asks for the scopes of the 401's
// WWW-Authenticate) grants what it holds of them and says so in scope
// (RFC 6749 §3.3); only an empty intersection is refused.
func TestClientCredentialsScopeIntersection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec, auth.ScopeFilesRead})
	if err != nil {
		t.Fatal(err)
	}
	c := client{id: id, secret: secret}
	cases := []struct {
		name, scope, want string
	}{
		{"all gateway scopes", strings.Join(auth.AllScopes, " "), "sandbox:files:read sandbox:exec"},
		{"one held one not", "sandbox:exec sandbox:audit", "sandbox:exec"},
		{"unknown scope dropped", "sandbox:exec email", "sandbox:exec"},
		{"protocol scopes dropped", "openid offline_access sandbox:files:read", "sandbox:files:read"},
		{"only protocol scopes", "offline_access", "sandbox:exec sandbox:files:read"},
		{"none", "", "sandbox:exec sandbox:files:read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			form := url.Values{"grant_type": {"client_credentials"}}
			if tc.scope != "" {
				form.Set("scope", tc.scope)
			}
			tok := mustOK(t, e.tokenRequest(t, c, form))
			if tok.Scope != tc.want {
				t.Errorf("response scope = %q, want %q", tok.Scope, tc.want)
			}
			if cl, _ := verify(t, tok.AccessToken, e.publicKeys(t)); cl.str("scope") != tc.want {
				t.Errorf("token scope = %q, want %q", cl.str("scope"), tc.want)
			}
			if tok.RefreshToken != "" || tok.IDToken != "" {
				t.Error("client_credentials returned a refresh or ID token")
			}
		})
	}
	for _, scope := range []string{"sandbox:audit sandbox:browser", "admin"} {
		r := e.tokenRequest(t, c, url.Values{"grant_type": {"client_credentials"}, "scope": {scope}})
		mustFail(t, r, "invalid_scope")
		if !strings.Contains(r.Description, "sandbox:exec sandbox:files:read") {
			t.Errorf("%q refused with %q: want the scopes the client holds", scope, r.Description)
		}
	}
}

func TestAddClientValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, err := issuer.AddClient(dir, "ci", nil); err == nil {
		t.Error("AddClient without scopes succeeded")
	}
	if _, _, err := issuer.AddClient(dir, "ci", []string{"admin"}); err == nil {
		t.Error("AddClient with an unknown scope succeeded")
	}
}

func TestUnsupportedGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, gt := range []string{"password", "urn:ietf:params:oauth:grant-type:jwt-bearer",
		"urn:ietf:params:oauth:grant-type:token-exchange", "implicit"} {
		mustFail(t, e.tokenRequest(t, client{id: "x"}, url.Values{"grant_type": {gt}}), "unsupported_grant_type")
	}
	mustFail(t, e.tokenRequest(t, client{id: "x"}, url.Values{}), "invalid_request")
}
