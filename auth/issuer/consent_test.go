package issuer_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth/issuer"
)

func addUser(e *env, name string) error {
	return issuer.AddUser(e.cfg.Dir, name, name+"-password", "")
}

// TestConsentDeny: denying sends access_denied with state and iss.
func TestConsentDeny(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAuthz(e.publicClient(t))
	u := e.signIn(t, a, false)
	q := u.Query()
	if q.Get("error") != "access_denied" || q.Get("state") != a.state || q.Get("iss") != e.url || q.Get("code") != "" {
		t.Fatalf("deny redirect: %s", u)
	}
	if !strings.HasPrefix(u.String(), testRedirect+"?") {
		t.Errorf("deny went to %s", u)
	}
}

// consentPage signs in and returns the browser and the consent page.
func (e *env) consentPage(t *testing.T, a authz) (*http.Client, string) {
	t.Helper()
	b := e.browser(t)
	_, page := e.authorize(t, b, a)
	resp, body := e.login(t, b, page, testUser, testPassword)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return b, body
}

// TestConsentPage shows who asks, for what, and where the answer goes,
// with everything the client controls escaped.
func TestConsentPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.register(t, map[string]any{"client_name": `<script>alert(1)</script><img src=x onerror=alert(2)>"'`})
	_, page := e.consentPage(t, newAuthz(c))
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", testRedirect,
		"Run commands and code in your sandboxes", "Read files in your sandboxes", e.resource(), "registered itself"} {
		if !strings.Contains(page, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("consent page contains a raw %s element", bad)
		}
	}
}

// TestConsentHeaders: the pages cannot be framed or cached.
func TestConsentHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	resp, _ := e.authorize(t, b, newAuthz(e.publicClient(t)))
	h := resp.Header
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		h.Get("Cache-Control") != "no-store" {
		t.Errorf("login page headers: %v", h)
	}
	for _, ck := range b.Jar.Cookies(mustURL(t, e.url)) {
		if ck.Name == "sandgate_signin" {
			return
		}
	}
	t.Error("no sign-in cookie set")
}

// TestConsentCSRF: only the browser that signed in can answer, and only
// with its form token.
func TestConsentCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	b, page := e.consentPage(t, newAuthz(c))
	id, token := formField(t, page, "id"), formField(t, page, "csrf")

	other := e.browser(t)
	e.loginPage(t, other, c) // gets a cookie of its own
	for name, try := range map[string]func() *http.Response{
		"other browser": func() *http.Response {
			r, _ := postForm(t, other, e.url+"/consent", url.Values{"id": {id}, "csrf": {token}, "action": {"approve"}})
			return r
		},
		"wrong token": func() *http.Response {
			r, _ := postForm(t, b, e.url+"/consent", url.Values{"id": {id}, "csrf": {otherToken(token)}, "action": {"approve"}})
			return r
		},
		"other browser GET": func() *http.Response {
			r, _ := get(t, other, e.url+"/consent?id="+url.QueryEscape(id))
			return r
		},
	} {
		if resp := try(); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	// The real browser can still approve, once.
	resp, _ := postForm(t, b, e.url+"/consent", url.Values{"id": {id}, "csrf": {token}, "action": {"approve"}})
	if resp.StatusCode != http.StatusSeeOther || location(t, resp).Query().Get("code") == "" {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	resp, _ = postForm(t, b, e.url+"/consent", url.Values{"id": {id}, "csrf": {token}, "action": {"approve"}})
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatal("a second approval issued a second code")
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// otherToken is token with its first character changed: a wrong token of
// the right length. (Putting an "x" first left it unchanged whenever it
// began with one: a failure in one run of 64.)
func otherToken(token string) string {
	first := "x"
	if token[0] == 'x' {
		first = "y"
	}
	return first + token[1:]
}
