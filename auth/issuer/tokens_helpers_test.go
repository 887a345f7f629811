package issuer_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/sandgate/sandgate/auth"
)

// tokenResp is a token endpoint answer, success or error.
type tokenResp struct {
	Status       int    `json:"-"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
	ExpiresIn    int    `json:"expires_in"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// tokenRequest posts form to /token, authenticating c with HTTP Basic
// when it has a secret and with client_id in the body otherwise.
func (e *env) tokenRequest(t *testing.T, c client, form url.Values) tokenResp {
	t.Helper()
	resp, body := e.clientPost(t, "/token", c, form)
	var out tokenResp
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("token response %d is not JSON: %s", resp.StatusCode, body)
	}
	out.Status = resp.StatusCode
	if out.Status == http.StatusOK && resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("token response Cache-Control = %q, want no-store", resp.Header.Get("Cache-Control"))
	}
	return out
}

// clientPost posts form to path as client c: HTTP Basic when it has a
// secret (client_secret_post when c.post), client_id in the body
// otherwise.
func (e *env) clientPost(t *testing.T, path string, c client, form url.Values) (*http.Response, string) {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	switch {
	case c.secret != "" && c.post:
		form.Set("client_id", c.id)
		form.Set("client_secret", c.secret)
	case c.secret == "" && c.id != "":
		form.Set("client_id", c.id)
	}
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.secret != "" && !c.post {
		req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

// exchange redeems code with a's verifier.
func (e *env) exchange(t *testing.T, a authz, code string) tokenResp {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirectURI}}
	if a.verifier != "" {
		form.Set("code_verifier", a.verifier)
	}
	return e.tokenRequest(t, a.client, form)
}

func (e *env) refresh(t *testing.T, c client, rt string, extra url.Values) tokenResp {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	for k, vs := range extra {
		form[k] = vs
	}
	return e.tokenRequest(t, c, form)
}

// mustOK fails unless r is a successful token response.
func mustOK(t *testing.T, r tokenResp) tokenResp {
	t.Helper()
	if r.Status != http.StatusOK || r.AccessToken == "" {
		t.Fatalf("token request failed: %d %s: %s", r.Status, r.Error, r.Description)
	}
	return r
}

// mustFail fails unless r is an error response with the given code.
func mustFail(t *testing.T, r tokenResp, code string) {
	t.Helper()
	if r.Status == http.StatusOK || r.Error != code {
		t.Fatalf("want error %s, got %d %q (%s)", code, r.Status, r.Error, r.Description)
	}
}

type claims map[string]any

// verify checks token's signature with the key named by its kid among
// keys, and returns its claims and header.
func verify(t *testing.T, token string, keys []auth.PublicKey) (claims, jose.Header) {
	t.Helper()
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256, jose.RS256})
	if err != nil {
		t.Fatalf("parse JWT: %v", err)
	}
	h := jws.Signatures[0].Header
	for _, k := range keys {
		if k.ID != h.KeyID {
			continue
		}
		if k.Algorithm != h.Algorithm {
			t.Fatalf("key %s is %s, token says %s", k.ID, k.Algorithm, h.Algorithm)
		}
		payload, err := jws.Verify(k.Key)
		if err != nil {
			t.Fatalf("verify with key %s: %v", k.ID, err)
		}
		var c claims
		if err := json.Unmarshal(payload, &c); err != nil {
			t.Fatal(err)
		}
		return c, h
	}
	t.Fatalf("no key with kid %q among %d keys", h.KeyID, len(keys))
	return nil, h
}

func (e *env) publicKeys(t *testing.T) []auth.PublicKey {
	t.Helper()
	keys, err := e.srv.PublicKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// jwks fetches the served JWK set as auth.PublicKeys.
func (e *env) jwks(t *testing.T) []auth.PublicKey {
	t.Helper()
	resp, body := get(t, http.DefaultClient, e.url+"/jwks")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("jwks: %d", resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(body), &set); err != nil {
		t.Fatal(err)
	}
	var keys []auth.PublicKey
	for _, k := range set.Keys {
		if !k.IsPublic() {
			t.Fatalf("JWKS publishes a private key %s", k.KeyID)
		}
		keys = append(keys, auth.PublicKey{ID: k.KeyID, Algorithm: k.Algorithm, Key: k.Key})
	}
	return keys
}

func (c claims) str(name string) string {
	s, _ := c[name].(string)
	return s
}

// aud returns the aud claim as a list, whichever JSON form it has.
func (c claims) aud() []string {
	switch v := c["aud"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, a := range v {
			s, _ := a.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

func (c claims) num(name string) int64 {
	f, _ := c[name].(float64)
	return int64(f)
}
