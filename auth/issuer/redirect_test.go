package issuer_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRedirectURIBreakouts: a redirect_uri that is not exactly a
// registered one is refused with a page, never redirected to.
func TestRedirectURIBreakouts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(t, map[string]any{"redirect_uris": []string{
		testRedirect, "https://app.example.com/cb", "http://localhost:7777/cb", "http://[::1]:9/cb",
	}})
	refused := []string{
		"http://127.0.0.1:9/callback/extra",
		"http://127.0.0.1:9/callbackx",
		"http://127.0.0.1:9/callback?x=1",
		"http://127.0.0.1:9/callback?",
		"http://127.0.0.1:9/Callback",
		"http://127.0.0.1:9/callback#frag",
		"http://127.0.0.1:9/callback/../callback",
		"http://127.0.0.2:9/callback",
		"http://localhost:9/callback",
		"http://127.0.0.1:9@evil.example/callback",
		"http://evil.example@127.0.0.1:9/callback",
		"https://127.0.0.1:9/callback",
		"https://app.example.com/cb/",
		"https://app.example.com/cb/../evil",
		"https://app.example.com.evil.example/cb",
		"https://app.example.com@evil.example/cb",
		"https://APP.example.com/cb",
		"http://app.example.com/cb",
		"https://evil.example/cb",
		"http://localhost:7778/cb", // localhost gets no port leeway
		"http://[::1]:9/other",
		"javascript:alert(1)//https://app.example.com/cb",
		"data:text/html,hi",
		"//evil.example/cb",
		"/callback",
		"",
	}
	for _, uri := range refused {
		t.Run(uri, func(t *testing.T) {
			t.Parallel()
			a := newAuthz(c)
			a.redirectURI = uri
			resp, body := e.authorize(t, e.browser(t), a)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Fatalf("redirected to %q", loc)
			}
			if !strings.Contains(body, "Sign-in stopped") {
				t.Errorf("no error page: %s", body)
			}
		})
	}
}

// TestRedirectURILoopbackPort: RFC 8252 §7.3 lets a native app on a
// loopback IP literal pick its port; everything else must still match.
func TestRedirectURILoopbackPort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(t, map[string]any{"redirect_uris": []string{testRedirect, "http://[::1]:9/cb"}})
	for _, uri := range []string{"http://127.0.0.1:54321/callback", "http://127.0.0.1/callback", "http://[::1]:40000/cb"} {
		t.Run(uri, func(t *testing.T) {
			a := newAuthz(c)
			a.redirectURI = uri
			u := e.signIn(t, a, true)
			if !strings.HasPrefix(u.String(), uri+"?") || u.Query().Get("code") == "" {
				t.Fatalf("want a code at %s, got %s", uri, u)
			}
			mustOK(t, e.exchange(t, a, u.Query().Get("code")))
		})
	}
}

// TestRedirectURIAtToken: the token request must name the same
// redirect_uri as the authorization request.
func TestRedirectURIAtToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(t, map[string]any{"redirect_uris": []string{testRedirect, "http://127.0.0.1:9/other"}})
	a := newAuthz(c)
	code := e.code(t, a)
	a.redirectURI = "http://127.0.0.1:9/other"
	mustFail(t, e.exchange(t, a, code), "invalid_grant")
}

// TestUnknownClient is shown a page, not redirected.
func TestUnknownClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAuthz(client{id: "no-such-client"})
	resp, _ := e.authorize(t, e.browser(t), a)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Fatalf("unknown client: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestDuplicateParameters: a repeated redirect_uri is refused outright.
func TestDuplicateParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAuthz(e.publicClient(t))
	a.extra = url.Values{"redirect_uri": {testRedirect, "https://evil.example/cb"}}
	resp, _ := e.authorize(t, e.browser(t), a)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Fatalf("duplicate redirect_uri: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
