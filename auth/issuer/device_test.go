package issuer_test

import (
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

var userCodeShape = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// TestDeviceFlow runs RFC 8628 end to end over HTTP: device
// authorization, polls while pending, the user's code entry, sign-in and
// consent through the real pages, the token, and the token's check at the
// resource server.
func TestDeviceFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clk := e.withClock()
	c := e.deviceClient(t)
	res := e.url + "/other"
	d := e.mustDevice(t, c, url.Values{"scope": {"sandbox:exec openid offline_access"}, "resource": {res}})

	if !userCodeShape.MatchString(d.UserCode) || d.ExpiresIn != 600 || d.Interval != 5 ||
		d.VerificationURI != e.url+"/device" || d.VerificationURIComplete != e.url+"/device?user_code="+d.UserCode {
		t.Errorf("device authorization response %+v", d)
	}
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "authorization_pending")
	clk.advance(5 * time.Second)
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "authorization_pending")

	consent, done := e.deviceSignIn(t, d, true)
	if !strings.Contains(consent, d.UserCode) || !strings.Contains(consent, "CLI agent") || !strings.Contains(consent, res) {
		t.Errorf("consent page does not show the code, the client and the resource:\n%s", consent)
	}
	if !strings.Contains(done, "Go back to your device") {
		t.Errorf("final page: %s", done)
	}
	clk.advance(5 * time.Second)
	tok := mustOK(t, e.poll(t, c, d.DeviceCode, nil))
	if tok.Scope != "sandbox:exec openid offline_access" || tok.RefreshToken == "" || tok.IDToken == "" {
		t.Errorf("token response scope %q, refresh token %t, ID token %t", tok.Scope, tok.RefreshToken != "", tok.IDToken != "")
	}
	if idt, _ := verify(t, tok.IDToken, e.publicKeys(t)); !slices.Equal(idt.aud(), []string{c.id}) || idt.str("sub") != testUser {
		t.Errorf("ID token aud %v sub %q, want the client and the user", idt.aud(), idt.str("sub"))
	}

	// The resource server of that resource accepts the token.
	v, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{Issuer: e.url, Audience: res, TenantClaim: "tenant", Keys: e.srv})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(t.Context(), tok.AccessToken)
	if err != nil {
		t.Fatalf("resource server refuses the device token: %v", err)
	}
	if id.Subject != testUser || id.Tenant != testTenant || id.ClientID != c.id ||
		!slices.Equal(id.Scopes, []string{auth.ScopeExec}) || !slices.Equal(id.Audience, []string{res}) {
		t.Errorf("identity %+v", id)
	}
	next := mustOK(t, e.refresh(t, c, tok.RefreshToken, nil))
	if cl, _ := verify(t, next.AccessToken, e.publicKeys(t)); !slices.Equal(cl.aud(), []string{res}) {
		t.Errorf("refreshed aud = %v", cl.aud())
	}

	// One-time use: a second redemption fails and ends the grant.
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "invalid_grant")
	mustFail(t, e.refresh(t, c, next.RefreshToken, nil), "invalid_grant")
	// Nothing on disk holds the device code or the user code.
	assertNotOnDisk(t, e.cfg.Dir, d.DeviceCode, strings.ReplaceAll(d.UserCode, "-", ""))
}

func assertNotOnDisk(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		for _, s := range secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("%s holds a device flow secret", path)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeviceDenied: the user's refusal reaches the device as access_denied.
func TestDeviceDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clk := e.withClock()
	c := e.deviceClient(t)
	d := e.mustDevice(t, c, nil)
	if _, done := e.deviceSignIn(t, d, false); !strings.Contains(done, "Access denied") {
		t.Errorf("final page: %s", done)
	}
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "access_denied")
	clk.advance(10 * time.Second)
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "access_denied")
	// The code cannot be entered again.
	b := e.browser(t)
	if resp, page := e.enterCode(t, b, d.VerificationURIComplete, ""); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "wrong or has expired") {
		t.Errorf("answered code entered again: %d", resp.StatusCode)
	}
}

// TestDeviceExpiry: after ten minutes the device gets expired_token, and
// the code can neither be entered nor approved.
func TestDeviceExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clk := e.withClock()
	c := e.deviceClient(t)

	early, late := e.mustDevice(t, c, nil), e.mustDevice(t, c, nil)
	// The user reaches the consent page of one in time...
	b := e.browser(t)
	_, page := e.enterCode(t, b, early.VerificationURIComplete, "")
	_, consent := e.login(t, b, page, testUser, testPassword)
	clk.advance(10*time.Minute + time.Second)
	// ...but answers too late.
	resp, body := postForm(t, b, e.url+"/consent", url.Values{
		"id": {formField(t, consent, "id")}, "csrf": {formField(t, consent, "csrf")}, "action": {"approve"},
	})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "expired") {
		t.Errorf("late approval: %d %s", resp.StatusCode, body)
	}
	mustFail(t, e.poll(t, c, early.DeviceCode, nil), "expired_token")
	if resp, page := e.enterCode(t, e.browser(t), late.VerificationURIComplete, ""); resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "wrong or has expired") {
		t.Errorf("expired code entered: %d", resp.StatusCode)
	}
	mustFail(t, e.poll(t, c, late.DeviceCode, nil), "expired_token")
}

// TestDeviceSlowDown: polling faster than the interval gets slow_down,
// and the interval grows by five seconds each time (RFC 8628 §3.5).
func TestDeviceSlowDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clk := e.withClock()
	c := e.deviceClient(t)
	d := e.mustDevice(t, c, nil)
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "authorization_pending")
	r := e.poll(t, c, d.DeviceCode, nil)
	mustFail(t, r, "slow_down")
	if !strings.Contains(r.Description, "10 seconds") {
		t.Errorf("slow_down says %q, want the new interval, 10 seconds", r.Description)
	}
	clk.advance(5 * time.Second) // the old interval is now too fast
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "slow_down")
	clk.advance(15 * time.Second)
	mustFail(t, e.poll(t, c, d.DeviceCode, nil), "authorization_pending")
}

// TestDeviceUserCodeRateLimit: wrong codes from one address are limited,
// and a limited attempt is not even checked, so the right code fails too.
func TestDeviceUserCodeRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.deviceClient(t)
	d := e.mustDevice(t, c, nil)
	b := e.browser(t)
	for i := range 10 {
		if resp, _ := e.enterCode(t, b, e.url+"/device", "BBBB-BBBB"); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("wrong code %d: %d", i, resp.StatusCode)
		}
	}
	if resp, _ := e.enterCode(t, b, d.VerificationURIComplete, ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after 10 wrong codes: %d, want 429", resp.StatusCode)
	}
}

// TestDeviceUserCodeTyping: people may type the code in lower case,
// without the dash, with spaces.
func TestDeviceUserCodeTyping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.mustDevice(t, e.deviceClient(t), nil)
	typed := " " + strings.ToLower(strings.Replace(d.UserCode, "-", " ", 1)) + " "
	if resp, page := e.enterCode(t, e.browser(t), e.url+"/device", typed); resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="login"`) {
		t.Fatalf("code %q: %d", typed, resp.StatusCode)
	}
}

// TestDeviceCodeFormCSRF: the code form is accepted only with this
// browser's token.
func TestDeviceCodeFormCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.mustDevice(t, e.deviceClient(t), nil)
	b := e.browser(t)
	_, page := get(t, b, d.VerificationURIComplete)
	forged := []url.Values{
		{"user_code": {d.UserCode}},
		{"user_code": {d.UserCode}, "csrf": {"x" + formField(t, page, "csrf")}},
	}
	for _, form := range forged {
		if resp, _ := postForm(t, b, e.url+"/device", form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("forged form %v: %d, want 403", form, resp.StatusCode)
		}
	}
	// Another browser's token does not fit this browser's cookie.
	other := e.browser(t)
	if resp, _ := postForm(t, other, e.url+"/device", url.Values{"user_code": {d.UserCode}, "csrf": {formField(t, page, "csrf")}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("token of another browser: %d, want 403", resp.StatusCode)
	}
}

// TestDeviceClientChecks: the device endpoints authenticate the client as
// /token does, require the device grant, and check scope and resource
// before the user is involved.
func TestDeviceClientChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := e.deviceClient(t)
	confidential := func(method string) client {
		c := e.registerOK(t, map[string]any{"redirect_uris": nil, "token_endpoint_auth_method": method,
			"grant_types": []string{auth.GrantDeviceCode}}).client
		c.post = method == auth.AuthMethodPost
		return c
	}
	basic, post := confidential(auth.AuthMethodBasic), confidential(auth.AuthMethodPost)
	refused := []struct {
		name   string
		c      client
		form   url.Values
		status int
		code   string
	}{
		{"code flow client", e.publicClient(t), nil, 400, "unauthorized_client"},
		{"unknown client", client{id: "nobody"}, nil, 401, "invalid_client"},
		{"wrong Basic secret", client{id: basic.id, secret: "wrong"}, nil, 401, "invalid_client"},
		{"wrong post secret", client{id: post.id, secret: "wrong", post: true}, nil, 401, "invalid_client"},
		{"confidential without secret", client{id: post.id}, nil, 401, "invalid_client"},
		{"scope not offered", pub, url.Values{"scope": {"admin"}}, 400, "invalid_scope"},
		{"unknown resource", pub, url.Values{"resource": {"https://evil.example/mcp"}}, 400, "invalid_target"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := e.deviceAuthorize(t, tc.c, tc.form)
			if d.Status != tc.status || d.Error != tc.code {
				t.Errorf("got %d %s (%s), want %d %s", d.Status, d.Error, d.Description, tc.status, tc.code)
			}
		})
	}
	for _, c := range []client{basic, post} {
		d := e.mustDevice(t, c, nil)
		e.deviceSignIn(t, d, true)
		if tok := mustOK(t, e.poll(t, c, d.DeviceCode, nil)); tok.RefreshToken != "" {
			t.Error("refresh token for a client without the refresh grant")
		}
	}

	d := e.mustDevice(t, pub, nil)
	mustFail(t, e.poll(t, e.deviceClient(t), d.DeviceCode, nil), "invalid_grant")
	mustFail(t, e.poll(t, e.publicClient(t), d.DeviceCode, nil), "unauthorized_client")
	mustFail(t, e.poll(t, pub, d.DeviceCode, url.Values{"resource": {e.url + "/other"}}), "invalid_target")
	mustFail(t, e.poll(t, pub, "", nil), "invalid_request")
	mustFail(t, e.poll(t, pub, "not-a-device-code", nil), "invalid_grant")
	mustFail(t, e.poll(t, pub, d.DeviceCode, nil), "authorization_pending")
}
