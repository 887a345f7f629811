package issuer_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// clock is a settable clock for device authorizations.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// withClock stops e's device clock at the current time.
func (e *env) withClock() *clock {
	c := &clock{now: time.Now()}
	issuer.SetDeviceClock(e.srv, c.Now)
	return c
}

// deviceClient registers a public client the way a command-line agent
// would: the device grant and refresh tokens, no redirect URI.
func (e *env) deviceClient(t *testing.T) client {
	t.Helper()
	return e.registerOK(t, map[string]any{"client_name": "CLI agent", "redirect_uris": nil,
		"grant_types": []string{auth.GrantDeviceCode, auth.GrantRefresh}}).client
}

// deviceResp is a device authorization response, success or error.
type deviceResp struct {
	Status                  int    `json:"-"`
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
	Error                   string `json:"error"`
	Description             string `json:"error_description"`
}

// deviceAuthorize posts form to /device_authorization as c.
func (e *env) deviceAuthorize(t *testing.T, c client, form url.Values) deviceResp {
	t.Helper()
	resp, body := e.clientPost(t, "/device_authorization", c, form)
	var out deviceResp
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("device authorization response %d is not JSON: %s", resp.StatusCode, body)
	}
	out.Status = resp.StatusCode
	return out
}

// mustDevice starts a device authorization or fails the test.
func (e *env) mustDevice(t *testing.T, c client, form url.Values) deviceResp {
	t.Helper()
	d := e.deviceAuthorize(t, c, form)
	if d.Status != http.StatusOK || d.DeviceCode == "" {
		t.Fatalf("device authorization: %d %s: %s", d.Status, d.Error, d.Description)
	}
	return d
}

// poll is one device token request.
func (e *env) poll(t *testing.T, c client, deviceCode string, extra url.Values) tokenResp {
	t.Helper()
	form := url.Values{"grant_type": {auth.GrantDeviceCode}, "device_code": {deviceCode}}
	for k, vs := range extra {
		form[k] = vs
	}
	return e.tokenRequest(t, c, form)
}

// enterCode opens the verification page as a browser that followed
// verification_uri_complete, and submits the code shown. It returns the
// page the browser ends on.
func (e *env) enterCode(t *testing.T, b *http.Client, complete, typed string) (*http.Response, string) {
	t.Helper()
	resp, page := get(t, b, complete)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="device"`) {
		t.Fatalf("verification page: %d %s", resp.StatusCode, page)
	}
	if typed == "" {
		typed = formField(t, page, "user_code")
	}
	return postForm(t, b, e.url+"/device", url.Values{"csrf": {formField(t, page, "csrf")}, "user_code": {typed}})
}

// deviceSignIn is the user's part of the device flow through the real
// pages: enter the code, sign in, answer. It returns the consent page and
// the final page.
func (e *env) deviceSignIn(t *testing.T, d deviceResp, approve bool) (consent, done string) {
	t.Helper()
	b := e.browser(t)
	resp, page := e.enterCode(t, b, d.VerificationURIComplete, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="login"`) {
		t.Fatalf("after the code: want the login page, got %d %s", resp.StatusCode, page)
	}
	resp, consent = e.login(t, b, page, testUser, testPassword)
	if resp.StatusCode != http.StatusOK || !strings.Contains(consent, `action="consent"`) {
		t.Fatalf("login: want the consent page, got %d %s", resp.StatusCode, consent)
	}
	return consent, e.answer(t, b, consent, approve)
}

// answer posts the consent form found in page.
func (e *env) answer(t *testing.T, b *http.Client, page string, approve bool) string {
	t.Helper()
	action := "deny"
	if approve {
		action = "approve"
	}
	resp, done := postForm(t, b, e.url+"/consent", url.Values{
		"id": {formField(t, page, "id")}, "csrf": {formField(t, page, "csrf")}, "action": {action},
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consent answer: %d %s", resp.StatusCode, done)
	}
	return done
}
