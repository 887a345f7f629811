package issuer_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCodeFlow runs a whole authorization code flow with a dynamically
// registered public client and checks the access token.
func TestCodeFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	start := time.Now()
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))

	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.IDToken != "" {
		t.Errorf("token response: type %q, refresh %t, id token %t", tok.TokenType, tok.RefreshToken != "", tok.IDToken != "")
	}
	if tok.ExpiresIn < 590 || tok.ExpiresIn > 600 {
		t.Errorf("expires_in = %d, want about 600", tok.ExpiresIn)
	}
	// The signature must verify both with the keys the gateway is given
	// and with the keys any other verifier fetches.
	cl, h := verify(t, tok.AccessToken, e.publicKeys(t))
	verify(t, tok.AccessToken, e.jwks(t))

	if h.Algorithm != "ES256" || h.ExtraHeaders["typ"] != "at+jwt" {
		t.Errorf("header alg %s typ %v, want ES256 at+jwt", h.Algorithm, h.ExtraHeaders["typ"])
	}
	if got := cl.aud(); !slices.Equal(got, []string{e.resource()}) {
		t.Errorf("aud = %v, want exactly [%s]", got, e.resource())
	}
	want := map[string]string{"iss": e.url, "sub": testUser, "client_id": c.id,
		"tenant": testTenant, "scope": "sandbox:exec sandbox:files:read"}
	for k, v := range want {
		if got := cl.str(k); got != v {
			t.Errorf("claim %s = %q, want %q", k, got, v)
		}
	}
	if cl.str("jti") == "" {
		t.Error("no jti")
	}
	iat, exp := cl.num("iat"), cl.num("exp")
	if d := time.Duration(exp-iat) * time.Second; d < 599*time.Second || d > 601*time.Second {
		t.Errorf("exp - iat = %v, want AccessTokenTTL (10m)", d)
	}
	if iat < start.Unix()-1 || iat > time.Now().Unix()+1 {
		t.Errorf("iat %d is not now", iat)
	}
}

// TestIDToken: an ID token only for openid, and with the client, not the
// gateway, as audience.
func TestIDToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	a.scope = "openid sandbox:exec"
	a.extra = map[string][]string{"nonce": {"n-0S6_WzA2Mj"}}
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	if tok.IDToken == "" {
		t.Fatal("no ID token for the openid scope")
	}
	id, h := verify(t, tok.IDToken, e.publicKeys(t))
	if !slices.Equal(id.aud(), []string{c.id}) || id.str("nonce") != "n-0S6_WzA2Mj" || id.str("sub") != testUser {
		t.Errorf("ID token aud %v nonce %q sub %q", id.aud(), id.str("nonce"), id.str("sub"))
	}
	if h.ExtraHeaders["typ"] == "at+jwt" {
		t.Error("ID token typed as an access token")
	}
	at, _ := verify(t, tok.AccessToken, e.publicKeys(t))
	if at.str("scope") != "sandbox:exec" {
		t.Errorf("access token scope = %q: protocol scopes belong in no access token", at.str("scope"))
	}
	next := mustOK(t, e.refresh(t, c, tok.RefreshToken, nil))
	if next.IDToken == "" {
		t.Fatal("no ID token on refresh")
	}
	if id, _ := verify(t, next.IDToken, e.publicKeys(t)); !slices.Equal(id.aud(), []string{c.id}) || id.str("sub") != testUser {
		t.Errorf("refreshed ID token aud %v sub %q", id.aud(), id.str("sub"))
	}
}

// TestCORS: browser-based clients may call the token endpoint and read
// metadata from another origin; the sign-in pages allow no such thing.
func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	preflight := func(path string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, e.url+path, nil)
		req.Header.Set("Origin", "http://localhost:6274")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/token", "/register", "/.well-known/oauth-authorization-server", "/jwks"} {
		if resp := preflight(path); resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s preflight: %d %q", path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	for _, path := range []string{"/login", "/consent", "/authorize"} {
		if resp := preflight(path); resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s answers CORS", path)
		}
	}
}

// TestDefaultScopes: a client that asks for no scope gets every scope it
// may have.
func TestDefaultScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAuthz(e.publicClient(t))
	a.scope = ""
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	cl, _ := verify(t, tok.AccessToken, e.publicKeys(t))
	if got := strings.Fields(cl.str("scope")); len(got) != 5 {
		t.Errorf("scope = %v, want all five gateway scopes", got)
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		resp, body := get(t, http.DefaultClient, e.url+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		checks := map[string]any{
			"issuer":                        e.url,
			"authorization_endpoint":        e.url + "/authorize",
			"token_endpoint":                e.url + "/token",
			"registration_endpoint":         e.url + "/register",
			"jwks_uri":                      e.url + "/jwks",
			"device_authorization_endpoint": e.url + "/device_authorization",
			"authorization_response_iss_parameter_supported": true,
		}
		for k, v := range checks {
			if m[k] != v {
				t.Errorf("%s: %s = %v, want %v", path, k, m[k], v)
			}
		}
		if _, ok := m["client_id_metadata_document_supported"]; ok {
			t.Errorf("%s: advertises metadata documents without a fetcher", path)
		}
		list := func(k string) []string {
			var out []string
			for _, v := range m[k].([]any) {
				out = append(out, v.(string))
			}
			return out
		}
		if got := list("code_challenge_methods_supported"); !slices.Equal(got, []string{"S256"}) {
			t.Errorf("code_challenge_methods_supported = %v", got)
		}
		if got := list("grant_types_supported"); !slices.Equal(got, []string{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"}) {
			t.Errorf("grant_types_supported = %v", got)
		}
		if got := list("scopes_supported"); !slices.Contains(got, "sandbox:exec") || !slices.Contains(got, "offline_access") {
			t.Errorf("scopes_supported = %v", got)
		}
	}
}

func TestMetadataOptionalFeatures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withoutDCR(), withFetcher(testFetcher(nil)))
	_, body := get(t, http.DefaultClient, e.url+"/.well-known/oauth-authorization-server")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["registration_endpoint"]; ok {
		t.Error("registration_endpoint advertised with DCR off")
	}
	if m["client_id_metadata_document_supported"] != true {
		t.Error("client_id_metadata_document_supported missing with a fetcher")
	}
	if resp, _ := get(t, http.DefaultClient, e.url+"/register"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/register with DCR off: %d, want 404", resp.StatusCode)
	}
}

// TestRoutes: every listed route is served, and none collides with what
// the gateway serves itself.
func TestRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	routes := e.srv.Routes()
	for _, want := range []string{"/authorize", "/token", "/register", "/jwks", "/login", "/consent", "/device_authorization", "/device", "/.well-known/oauth-authorization-server"} {
		if !slices.Contains(routes, want) {
			t.Errorf("Routes() lacks %s: %v", want, routes)
		}
	}
	for _, r := range routes {
		if r == "/mcp" || r == "/healthz" || strings.HasPrefix(r, "/.well-known/oauth-protected-resource") {
			t.Errorf("Routes() includes the gateway's own path %s", r)
		}
		if resp, _ := get(t, http.DefaultClient, e.url+r); resp.StatusCode == http.StatusNotFound {
			t.Errorf("route %s answers 404", r)
		}
	}
	if resp, _ := get(t, http.DefaultClient, e.url+"/healthz"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("Handler serves /healthz (%d); that is the gateway's", resp.StatusCode)
	}
}
