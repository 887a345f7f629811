package issuer_test

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
)

// gatewayVerifier is the resource server's check as the gateway sets it
// up for the embedded issuer: keys and revocations from the Server.
func (e *env) gatewayVerifier(t *testing.T) *resource.JWTVerifier {
	t.Helper()
	v, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{Issuer: e.url, Audience: e.resource(),
		TenantClaim: "tenant", Keys: e.srv, Revocations: e.srv})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestListClients: the list shows every stored client and every
// metadata-document client that holds refresh tokens, with how each came
// to be.
func TestListClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withFetcher(testFetcher(nil)))
	dyn := e.publicClient(t)
	a := newAuthz(dyn)
	mustOK(t, e.exchange(t, a, e.code(t, a)))
	cimd := newAuthz(client{id: metadataClientID})
	mustOK(t, e.exchange(t, cimd, e.code(t, cimd)))
	ci, _, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}

	infos, err := issuer.ListClients(e.cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		kind, name string
		redirects  []string
		tokens     int
	}{
		dyn.id:           {auth.ClientDynamic, "Test MCP client", []string{testRedirect}, 1},
		metadataClientID: {auth.ClientMetadata, "", nil, 1},
		ci:               {auth.ClientStatic, "ci", nil, 0},
	}
	if len(infos) != len(want) {
		t.Fatalf("%d clients listed, want %d: %+v", len(infos), len(want), infos)
	}
	for _, c := range infos {
		w, ok := want[c.ID]
		if !ok || c.Kind != w.kind || c.Name != w.name || !slices.Equal(c.RedirectURIs, w.redirects) ||
			c.RefreshTokens != w.tokens || len(c.Scopes) == 0 || c.CreatedAt.IsZero() {
			t.Errorf("listed %+v, want %+v", c, w)
		}
	}
}

// TestRevokeClient: revoking a client removes its registration, ends its
// refresh tokens, and makes the gateway refuse its access tokens at once.
func TestRevokeClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.gatewayVerifier(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	other := newAuthz(e.publicClient(t))
	otherTok := mustOK(t, e.exchange(t, other, e.code(t, other)))
	if _, err := v.Verify(t.Context(), tok.AccessToken); err != nil {
		t.Fatalf("token refused before the revocation: %v", err)
	}

	res, err := issuer.RevokeClient(e.cfg.Dir, c.id)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Removed || res.RefreshTokens != 1 || res.AccessTokenTTL != 10*time.Minute {
		t.Errorf("RevokeClient = %+v", res)
	}
	if _, err := v.Verify(t.Context(), tok.AccessToken); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("access token of a revoked client: %v, want refused", err)
	}
	if _, err := v.Verify(t.Context(), otherTok.AccessToken); err != nil {
		t.Errorf("another client's token refused: %v", err)
	}
	mustFail(t, e.refresh(t, c, tok.RefreshToken, nil), "invalid_client")
	if resp, _ := e.authorize(t, e.browser(t), newAuthz(c)); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("authorize with a revoked client: %d", resp.StatusCode)
	}
	infos, _ := issuer.ListClients(e.cfg.Dir)
	if slices.ContainsFunc(infos, func(i issuer.ClientInfo) bool { return i.ID == c.id }) {
		t.Error("a revoked client is still listed")
	}
	if _, err := issuer.RevokeClient(e.cfg.Dir, c.id); !errors.Is(err, auth.ErrClientNotFound) {
		t.Errorf("second revoke = %v, want ErrClientNotFound", err)
	}
}

// TestRevokeCIClient: a CI client's secret stops working, and so do the
// tokens it already has.
func TestRevokeCIClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.gatewayVerifier(t)
	id, secret, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	c := client{id: id, secret: secret}
	cc := url.Values{"grant_type": {"client_credentials"}}
	tok := mustOK(t, e.tokenRequest(t, c, cc))
	if _, err := issuer.RevokeClient(e.cfg.Dir, id); err != nil {
		t.Fatal(err)
	}
	mustFail(t, e.tokenRequest(t, c, url.Values{"grant_type": {"client_credentials"}}), "invalid_client")
	if _, err := v.Verify(t.Context(), tok.AccessToken); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("token of a revoked CI client: %v, want refused", err)
	}
}

// TestRevokeMetadataClient: a metadata-document client has no stored
// registration; revoking it ends its tokens, and only tokens issued
// after the revocation (a new sign-in) are accepted.
func TestRevokeMetadataClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withFetcher(testFetcher(nil)))
	v := e.gatewayVerifier(t)
	a := newAuthz(client{id: metadataClientID})
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	res, err := issuer.RevokeClient(e.cfg.Dir, metadataClientID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed || res.RefreshTokens != 1 {
		t.Errorf("RevokeClient = %+v", res)
	}
	if _, err := v.Verify(t.Context(), tok.AccessToken); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("token issued before the revocation: %v, want refused", err)
	}
	mustFail(t, e.refresh(t, a.client, tok.RefreshToken, nil), "invalid_grant")
	// iat has whole seconds: a token from the next second on is not
	// revoked. (Asked directly, so the test need not wait a second.)
	later := time.Now().Add(2 * time.Second)
	if revoked, err := e.srv.ClientRevoked(t.Context(), metadataClientID, later); err != nil || revoked {
		t.Errorf("token issued after the revocation: revoked %t, %v", revoked, err)
	}
	if _, err := issuer.RevokeClient(e.cfg.Dir, "no-such-client"); !errors.Is(err, auth.ErrClientNotFound) {
		t.Errorf("revoke of an unknown client = %v", err)
	}
}
