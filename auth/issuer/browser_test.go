package issuer_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// browser is a user agent with a cookie jar. It follows redirects within
// the issuer and stops at any other origin (the client's redirect URI),
// returning that redirect so the test can read Location.
func (e *env) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	issuerHost := strings.TrimPrefix(e.url, "http://")
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != issuerHost {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// authz is one authorization request.
type authz struct {
	client      client
	redirectURI string
	scope       string
	state       string
	verifier    string
	method      string // code_challenge_method; "-" leaves out PKCE
	challenge   string // computed from verifier when empty
	extra       url.Values
}

func newAuthz(c client) authz {
	return authz{client: c, redirectURI: testRedirect, scope: "sandbox:exec sandbox:files:read",
		state: randomString(), verifier: randomString() + randomString(), method: "S256"}
}

func (a authz) query() url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {a.client.id}, "redirect_uri": {a.redirectURI}}
	if a.scope != "" {
		q.Set("scope", a.scope)
	}
	if a.state != "" {
		q.Set("state", a.state)
	}
	if a.method != "-" {
		ch := a.challenge
		if ch == "" {
			ch = s256(a.verifier)
		}
		q.Set("code_challenge", ch)
		q.Set("code_challenge_method", a.method)
	}
	for k, vs := range a.extra {
		q[k] = vs
	}
	return q
}

// authorize GETs /authorize and follows it as far as the browser goes.
func (e *env) authorize(t *testing.T, b *http.Client, a authz) (*http.Response, string) {
	t.Helper()
	return get(t, b, e.url+"/authorize?"+a.query().Encode())
}

// signIn runs the whole browser part: authorize, login, consent. It
// returns the redirect to the client's redirect URI.
func (e *env) signIn(t *testing.T, a authz, approve bool) *url.URL {
	t.Helper()
	b := e.browser(t)
	resp, body := e.authorize(t, b, a)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `action="login"`) {
		t.Fatalf("authorize: want the login page, got %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	resp, body = e.login(t, b, body, testUser, testPassword)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `action="consent"`) {
		t.Fatalf("login: want the consent page, got %d %s", resp.StatusCode, body)
	}
	action := "deny"
	if approve {
		action = "approve"
	}
	resp, _ = postForm(t, b, e.url+"/consent", url.Values{
		"id": {formField(t, body, "id")}, "csrf": {formField(t, body, "csrf")}, "action": {action},
	})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent: want 303 to the client, got %d", resp.StatusCode)
	}
	return location(t, resp)
}

// login posts the login form found in page.
func (e *env) login(t *testing.T, b *http.Client, page, user, password string) (*http.Response, string) {
	t.Helper()
	return postForm(t, b, e.url+"/login", url.Values{
		"id": {formField(t, page, "id")}, "csrf": {formField(t, page, "csrf")},
		"username": {user}, "password": {password},
	})
}

// code runs a sign-in and returns the authorization code, checking the
// redirect carries state and iss.
func (e *env) code(t *testing.T, a authz) string {
	t.Helper()
	u := e.signIn(t, a, true)
	q := u.Query()
	if q.Get("error") != "" {
		t.Fatalf("authorization failed: %s", u)
	}
	if got := q.Get("iss"); got != e.url {
		t.Errorf("iss = %q, want %q", got, e.url)
	}
	if got := q.Get("state"); got != a.state {
		t.Errorf("state = %q, want %q", got, a.state)
	}
	if q.Get("code") == "" {
		t.Fatalf("no code in %s", u)
	}
	return q.Get("code")
}

func get(t *testing.T, b *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

func postForm(t *testing.T, b *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := b.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func location(t *testing.T, resp *http.Response) *url.URL {
	t.Helper()
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		t.Fatalf("no usable Location in %d response: %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return u
}

// formField extracts a hidden input's value the way a browser would see it.
func formField(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s field in page:\n%s", name, page)
	}
	return m[1]
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
