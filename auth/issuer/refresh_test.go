package issuer_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
)

// TestRefreshRotation: every refresh returns a new refresh token and
// retires the old one; presenting a retired token revokes the family.
func TestRefreshRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	first := mustOK(t, e.exchange(t, a, e.code(t, a)))

	second := mustOK(t, e.refresh(t, c, first.RefreshToken, nil))
	if second.RefreshToken == "" || second.RefreshToken == first.RefreshToken {
		t.Fatal("refresh did not rotate the refresh token")
	}
	cl, _ := verify(t, second.AccessToken, e.publicKeys(t))
	if cl.str("sub") != testUser || cl.str("tenant") != testTenant || cl.str("scope") != "sandbox:exec sandbox:files:read" {
		t.Errorf("refreshed claims: %v", cl)
	}
	third := mustOK(t, e.refresh(t, c, second.RefreshToken, nil))

	// Reuse of a rotated token: refused, and the live one dies with it.
	mustFail(t, e.refresh(t, c, first.RefreshToken, nil), "invalid_grant")
	mustFail(t, e.refresh(t, c, third.RefreshToken, nil), "invalid_grant")
}

// TestRefreshNarrowsScope: a refresh may ask for fewer scopes for one
// token without losing the rest of the grant.
func TestRefreshNarrowsScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))

	mustFail(t, e.refresh(t, c, tok.RefreshToken, url.Values{"scope": {"sandbox:audit"}}), "invalid_scope")
	narrow := mustOK(t, e.refresh(t, c, tok.RefreshToken, url.Values{"scope": {"sandbox:exec"}}))
	cl, _ := verify(t, narrow.AccessToken, e.publicKeys(t))
	if cl.str("scope") != "sandbox:exec" {
		t.Errorf("narrowed scope = %q", cl.str("scope"))
	}
	wide := mustOK(t, e.refresh(t, c, narrow.RefreshToken, nil))
	cl, _ = verify(t, wide.AccessToken, e.publicKeys(t))
	if cl.str("scope") != "sandbox:exec sandbox:files:read" {
		t.Errorf("scope after narrowing once = %q, want the whole grant", cl.str("scope"))
	}
}

// TestRefreshOtherClient: a refresh token works only for its client.
func TestRefreshOtherClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	mustFail(t, e.refresh(t, e.publicClient(t), tok.RefreshToken, nil), "invalid_grant")
}

// TestRefreshRace: of concurrent refreshes with one token at most one
// succeeds; the losers count as reuse.
func TestRefreshRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	var wg sync.WaitGroup
	results := make([]tokenResp, 8)
	for i := range results {
		wg.Go(func() { results[i] = e.refresh(t, c, tok.RefreshToken, nil) })
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		if r.Status == http.StatusOK {
			ok++
		} else if r.Error != "invalid_grant" {
			t.Errorf("loser got %d %s", r.Status, r.Error)
		}
	}
	if ok > 1 {
		t.Fatalf("%d concurrent refreshes with one token succeeded", ok)
	}
}

// TestCodeReplay: a code works once; its replay is invalid_grant and
// revokes the refresh tokens issued from it.
func TestCodeReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	code := e.code(t, a)
	tok := mustOK(t, e.exchange(t, a, code))
	mustFail(t, e.exchange(t, a, code), "invalid_grant")
	mustFail(t, e.refresh(t, c, tok.RefreshToken, nil), "invalid_grant")
}

// TestRevoke: RFC 7009 revocation of a refresh token ends its family.
func TestRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	resp, err := http.PostForm(e.url+"/revoke", url.Values{"token": {tok.RefreshToken}, "client_id": {c.id}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	mustFail(t, e.refresh(t, c, tok.RefreshToken, nil), "invalid_grant")
}
