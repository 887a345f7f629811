package issuer

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
)

// csrf protects the login and consent forms. Each browser gets a random
// cookie; each form carries HMAC(key, purpose, auth request ID, cookie).
// A forged POST from another site lacks the cookie value (SameSite=Lax
// keeps the cookie off cross-site POSTs as well), and a token lifted from
// one sign-in is useless for another request or purpose.
//
// The key is made at start-up: auth requests live in memory, so forms do
// not outlive a restart either.
type csrf struct {
	key    []byte
	name   string // cookie name
	secure bool
}

const (
	purposeLogin   = "login"
	purposeConsent = "consent"
	cookieLen      = 43 // base64url of 32 random bytes
)

func newCSRF(secure bool) *csrf {
	c := &csrf{key: randomBytes(32), name: "sandgate_signin", secure: secure}
	if secure {
		// __Host- binds the cookie to this exact origin (no Domain, Path=/,
		// Secure), so a sibling subdomain cannot plant one.
		c.name = "__Host-sandgate_signin"
	}
	return c
}

// cookie returns the browser's cookie value, setting a new cookie when it
// has none or a malformed one.
func (c *csrf) cookie(w http.ResponseWriter, r *http.Request) string {
	if v, ok := c.value(r); ok {
		return v
	}
	v := randomToken(32)
	http.SetCookie(w, &http.Cookie{
		Name: c.name, Value: v, Path: "/", HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(authRequestTTL.Seconds()) * 3,
	})
	return v
}

// value returns a well-formed cookie value sent by the browser.
func (c *csrf) value(r *http.Request) (string, bool) {
	ck, err := r.Cookie(c.name)
	if err != nil || len(ck.Value) != cookieLen || strings.Trim(ck.Value, base64URLAlphabet) != "" {
		return "", false
	}
	return ck.Value, true
}

// token returns the form token for one purpose of one auth request.
func (c *csrf) token(cookie, requestID, purpose string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(purpose + "\x00" + requestID + "\x00" + cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// check verifies a submitted form against the browser's cookie and
// returns the cookie value.
func (c *csrf) check(r *http.Request, requestID, purpose string) (string, bool) {
	cookie, ok := c.value(r)
	if !ok {
		return "", false
	}
	want := c.token(cookie, requestID, purpose)
	got := r.PostForm.Get("csrf")
	return cookie, hmac.Equal([]byte(want), []byte(got))
}

// browserID names the browser that holds cookie, for binding an auth
// request to the browser that signed in without keeping the cookie.
func browserID(cookie string) string { return digest("browser\x00" + cookie) }

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
