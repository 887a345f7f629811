package issuer_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestResourceAtAuthorize: an unknown or ambiguous resource is refused
// with invalid_target (and iss); a listed one becomes the audience.
func TestResourceAtAuthorize(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	for name, res := range map[string][]string{
		"unknown":      {"https://evil.example/mcp"},
		"prefix":       {e.url + "/mcp/x"},
		"fragment":     {e.url + "/mcp#x"},
		"relative":     {"/mcp"},
		"two at once":  {e.url + "/mcp", e.url + "/other"},
		"other origin": {"http://127.0.0.1:1/mcp"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := newAuthz(c)
			a.extra = url.Values{"resource": res}
			resp, _ := e.authorize(t, e.browser(t), a)
			q := location(t, resp).Query()
			if resp.StatusCode != http.StatusFound || q.Get("error") != "invalid_target" || q.Get("iss") != e.url || q.Get("state") != a.state {
				t.Fatalf("want invalid_target with iss and state, got %d %v", resp.StatusCode, q)
			}
		})
	}
	t.Run("listed", func(t *testing.T) {
		t.Parallel()
		a := newAuthz(c)
		a.extra = url.Values{"resource": {e.url + "/other"}}
		tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
		cl, _ := verify(t, tok.AccessToken, e.publicKeys(t))
		if !slices.Equal(cl.aud(), []string{e.url + "/other"}) {
			t.Errorf("aud = %v", cl.aud())
		}
		// A refresh keeps the resource of the grant.
		next := mustOK(t, e.refresh(t, c, tok.RefreshToken, nil))
		cl, _ = verify(t, next.AccessToken, e.publicKeys(t))
		if !slices.Equal(cl.aud(), []string{e.url + "/other"}) {
			t.Errorf("refreshed aud = %v", cl.aud())
		}
	})
}

// TestResourceAtToken: the token endpoint may repeat the granted resource
// but not switch to another, not even to another listed one.
func TestResourceAtToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)

	a := newAuthz(c)
	code := e.code(t, a)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirectURI},
		"code_verifier": {a.verifier}, "resource": {e.url + "/other"}}
	mustFail(t, e.tokenRequest(t, c, form), "invalid_target")

	a = newAuthz(c)
	form = url.Values{"grant_type": {"authorization_code"}, "code": {e.code(t, a)}, "redirect_uri": {a.redirectURI},
		"code_verifier": {a.verifier}, "resource": {e.resource()}}
	tok := mustOK(t, e.tokenRequest(t, c, form))

	mustFail(t, e.refresh(t, c, tok.RefreshToken, url.Values{"resource": {"https://evil.example/mcp"}}), "invalid_target")
	mustFail(t, e.refresh(t, c, tok.RefreshToken, url.Values{"resource": {e.url + "/other"}}), "invalid_target")
	next := mustOK(t, e.refresh(t, c, tok.RefreshToken, url.Values{"resource": {e.resource()}}))
	cl, _ := verify(t, next.AccessToken, e.publicKeys(t))
	if !slices.Equal(cl.aud(), []string{e.resource()}) {
		t.Errorf("aud = %v", cl.aud())
	}
}
