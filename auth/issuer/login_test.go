package issuer_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// loginPage opens a fresh authorization in browser b and returns the
// login page.
func (e *env) loginPage(t *testing.T, b *http.Client, c client) string {
	t.Helper()
	resp, body := e.authorize(t, b, newAuthz(c))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `action="login"`) {
		t.Fatalf("no login page: %d", resp.StatusCode)
	}
	return body
}

// TestLoginCSRF: the login form is accepted only with the token issued to
// this browser for this sign-in.
func TestLoginCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)

	cases := map[string]func(t *testing.T) (*http.Client, url.Values){
		"wrong token": func(t *testing.T) (*http.Client, url.Values) {
			b := e.browser(t)
			page := e.loginPage(t, b, c)
			return b, url.Values{"id": {formField(t, page, "id")}, "csrf": {"AAAA" + formField(t, page, "csrf")[4:]}}
		},
		"no token": func(t *testing.T) (*http.Client, url.Values) {
			b := e.browser(t)
			page := e.loginPage(t, b, c)
			return b, url.Values{"id": {formField(t, page, "id")}}
		},
		"another browser": func(t *testing.T) (*http.Client, url.Values) {
			page := e.loginPage(t, e.browser(t), c)
			// The attacker's browser got its own cookie, but posts the
			// victim's sign-in with the victim's form token.
			other := e.browser(t)
			e.loginPage(t, other, c)
			return other, url.Values{"id": {formField(t, page, "id")}, "csrf": {formField(t, page, "csrf")}}
		},
		"no cookie": func(t *testing.T) (*http.Client, url.Values) {
			page := e.loginPage(t, e.browser(t), c)
			return &http.Client{}, url.Values{"id": {formField(t, page, "id")}, "csrf": {formField(t, page, "csrf")}}
		},
		"token of another sign-in": func(t *testing.T) (*http.Client, url.Values) {
			b := e.browser(t)
			first := e.loginPage(t, b, c)
			second := e.loginPage(t, b, c)
			return b, url.Values{"id": {formField(t, second, "id")}, "csrf": {formField(t, first, "csrf")}}
		},
	}
	for name, prepare := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, form := prepare(t)
			form.Set("username", testUser)
			form.Set("password", testPassword)
			resp, body := postForm(t, b, e.url+"/login", form)
			if resp.StatusCode != http.StatusForbidden || strings.Contains(body, `action="consent"`) {
				t.Fatalf("forged login: %d", resp.StatusCode)
			}
		})
	}
}

// TestLoginWrongPassword shows the form again with an error.
func TestLoginWrongPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	page := e.loginPage(t, b, e.publicClient(t))
	for _, user := range []string{testUser, "nobody"} {
		resp, body := e.login(t, b, page, user, "not-the-password")
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Wrong user name or password") {
			t.Fatalf("%s: %d", user, resp.StatusCode)
		}
	}
	resp, body := e.login(t, b, page, testUser, testPassword)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `action="consent"`) {
		t.Fatalf("right password after failures: %d", resp.StatusCode)
	}
}

// TestLoginRateLimitPerUser: after a burst of failures for one name, even
// the right password is refused for a while.
func TestLoginRateLimitPerUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	page := e.loginPage(t, b, e.publicClient(t))
	for i := range 5 {
		if resp, _ := e.login(t, b, page, testUser, fmt.Sprint("wrong", i)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, resp.StatusCode)
		}
	}
	if resp, _ := e.login(t, b, page, testUser, testPassword); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after 5 failures: %d, want 429", resp.StatusCode)
	}
	// Another user on the same address is not locked out by that.
	if err := addUser(e, "bob"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := e.login(t, b, page, "bob", "bob-password"); resp.StatusCode != http.StatusOK {
		t.Fatalf("other user: %d", resp.StatusCode)
	}
}

// TestLoginRateLimitPerIP: failures spread over many names are limited
// per client address.
func TestLoginRateLimitPerIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser(t)
	page := e.loginPage(t, b, e.publicClient(t))
	for i := range 20 {
		if resp, _ := e.login(t, b, page, fmt.Sprint("user", i), "wrong-password"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, resp.StatusCode)
		}
	}
	if resp, _ := e.login(t, b, page, testUser, testPassword); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after 20 failures from one address: %d, want 429", resp.StatusCode)
	}
}

// TestLoginSuccessIsFree: successful logins never use up the budget.
func TestLoginSuccessIsFree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	for i := range 8 {
		b := e.browser(t)
		if resp, _ := e.login(t, b, e.loginPage(t, b, c), testUser, testPassword); resp.StatusCode != http.StatusOK {
			t.Fatalf("login %d: %d", i, resp.StatusCode)
		}
	}
}
