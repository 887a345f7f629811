package issuer_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPKCERequired: PKCE S256 is required of public and confidential
// clients alike; zitadel on its own would let a confidential client skip it.
func TestPKCERequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clients := map[string]client{"public": e.publicClient(t), "confidential": e.confidentialClient(t)}
	for kind, c := range clients {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			refused := map[string]func(*authz){
				"missing":        func(a *authz) { a.method = "-" },
				"plain":          func(a *authz) { a.method = "plain"; a.challenge = a.verifier },
				"no method":      func(a *authz) { a.method = "" },
				"short":          func(a *authz) { a.challenge = "abc" },
				"not base64url":  func(a *authz) { a.challenge = strings.Repeat("+", 43) },
				"unknown method": func(a *authz) { a.method = "S512" },
			}
			for name, change := range refused {
				t.Run(name, func(t *testing.T) {
					a := newAuthz(c)
					change(&a)
					resp, _ := e.authorize(t, e.browser(t), a)
					u := location(t, resp)
					q := u.Query()
					if resp.StatusCode != http.StatusFound || q.Get("error") != "invalid_request" {
						t.Fatalf("want an invalid_request redirect, got %d %s", resp.StatusCode, u)
					}
					if q.Get("iss") != e.url || q.Get("state") != a.state || !strings.HasPrefix(u.String(), testRedirect+"?") {
						t.Errorf("error redirect lacks iss/state or goes elsewhere: %s", u)
					}
				})
			}
		})
	}
}

// TestPKCEVerifier: the code is redeemed only with the verifier that
// matches its challenge.
func TestPKCEVerifier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for kind, c := range map[string]client{"public": e.publicClient(t), "confidential": e.confidentialClient(t)} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			a := newAuthz(c)
			code := e.code(t, a)
			wrong := a
			wrong.verifier = randomString() + randomString()
			mustFail(t, e.exchange(t, wrong, code), "invalid_grant")
			// The failed attempt spent the code: single use means single try.
			mustFail(t, e.exchange(t, a, code), "invalid_grant")

			a = newAuthz(c)
			code = e.code(t, a)
			missing := a
			missing.verifier = ""
			mustFail(t, e.exchange(t, missing, code), "invalid_request")

			a = newAuthz(c)
			mustOK(t, e.exchange(t, a, e.code(t, a)))
		})
	}
}

// TestConfidentialClientNeedsSecret: the right verifier without the secret
// is not enough for a confidential client.
func TestConfidentialClientNeedsSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.confidentialClient(t)
	a := newAuthz(c)
	code := e.code(t, a)
	a.client.secret = "wrong"
	mustFail(t, e.exchange(t, a, code), "invalid_client")
}
