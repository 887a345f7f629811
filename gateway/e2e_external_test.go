package gateway_test

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway"
)

// TestExternalIssuer: with --issuer the gateway trusts another origin's
// tokens, found the way it finds any OIDC provider's: metadata discovery
// and JWKS over HTTP. The "external" provider here is our own
// authorization server on a separate origin, so the exchange is real.
func TestExternalIssuer(t *testing.T) {
	t.Parallel()
	idpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gwLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	idpURL, gwURL := "http://"+idpLn.Addr().String(), "http://"+gwLn.Addr().String()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	idp, err := issuer.New(t.Context(), issuer.Config{Issuer: idpURL, Resources: []string{gwURL + "/mcp"}, Dir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	idpSrv := &httptest.Server{Listener: idpLn, Config: &http.Server{Handler: idp.Handler()}}
	idpSrv.Start()
	defer idpSrv.Close()

	tg := startGatewayWith(t, gwLn, func(c *gateway.Config) {
		v, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{Issuer: idpURL, Audience: gwURL + "/mcp"}) // no Keys: HTTP discovery
		if err != nil {
			t.Fatal(err)
		}
		rs, err := resource.New(resource.Config{Resource: gwURL + "/mcp", AuthorizationServers: []string{idpURL}, ScopesSupported: auth.AllScopes, Verifier: v, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		c.Auth = rs
	})

	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	getJSON(t, gwURL+"/.well-known/oauth-protected-resource/mcp", &prm)
	if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != idpURL {
		t.Fatalf("resource metadata lists %v, want the external issuer %s", prm.AuthorizationServers, idpURL)
	}
	if resp, _ := http.Get(gwURL + "/.well-known/oauth-authorization-server"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the gateway serves an authorization server of its own in external mode: %d", resp.StatusCode)
	}

	id, secret, err := issuer.AddClient(dir, "ci", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	tr, code := postToken(t, idpURL+"/token", url.Values{"grant_type": {"client_credentials"}, "scope": {auth.ScopeExec}, "resource": {gwURL + "/mcp"}}, id+":"+secret)
	if code != http.StatusOK {
		t.Fatalf("token from the external issuer: %d %+v", code, tr)
	}
	c := bearerClient(t, tg.URL, tr.AccessToken)
	r := structuredAs[execResult](t, mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "echo external"})))
	if r.Stdout != "external\n" {
		t.Fatalf("run_shell: %+v", r)
	}

	// A key rotation at the provider: the gateway refetches the JWKS on
	// the new kid and keeps accepting tokens.
	if _, err := issuer.RotateKeys(dir); err != nil {
		t.Fatal(err)
	}
	tr2, _ := postToken(t, idpURL+"/token", url.Values{"grant_type": {"client_credentials"}, "scope": {auth.ScopeExec}, "resource": {gwURL + "/mcp"}}, id+":"+secret)
	mustOK(t, "run_shell after key rotation", call(t, bearerClient(t, tg.URL, tr2.AccessToken), "run_shell", map[string]any{"command": "true"}))

	// A token the provider minted for another resource is refused here.
	if resp := rawMCP(t, tg.URL, strings.Repeat("x", 10)+tr.AccessToken[10:], `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("mangled token: %d", resp.StatusCode)
	}
	tg.Close()
	if logs := tg.Logs.String(); strings.Contains(logs, tr.AccessToken) || strings.Contains(logs, tr2.AccessToken) {
		t.Fatal("an access token reached the gateway's logs")
	}
}
