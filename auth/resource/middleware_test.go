package resource_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

const testIssuerURL = "https://issuer.example"

// newServer returns a resource Server whose verifier accepts tokens signed
// by the returned key, and an HTTP server running Authenticate around a
// handler that echoes the request's identity and body.
func newServer(t *testing.T, v resource.Verifier) (*resource.Server, *httptest.Server, testKey) {
	t.Helper()
	key := newKey(t, "ES256", "k")
	if v == nil {
		var err error
		v, err = resource.NewJWTVerifier(t.Context(), resource.JWTConfig{
			Issuer: testIssuerURL, Audience: audience, Keys: staticKeys{{ID: "k", Key: key.public()}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, err := resource.New(resource.Config{
		Resource: audience, AuthorizationServers: []string{testIssuerURL},
		ScopesSupported: auth.AllScopes, ResourceName: "Sandgate", Verifier: v,
	})
	if err != nil {
		t.Fatal(err)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := resource.IdentityFrom(r.Context())
		if !ok {
			t.Error("next ran without an identity")
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(w).Encode(map[string]string{"sub": id.Subject, "body": string(body)})
	})
	srv := httptest.NewServer(rs.Authenticate(next))
	t.Cleanup(srv.Close)
	return rs, srv, key
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	rs, srv, key := newServer(t, nil)
	good := sign(t, key, claims(testIssuerURL))
	expired := sign(t, key, with(claims(testIssuerURL), map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}))
	const jsonType, formType = "application/json", "application/x-www-form-urlencoded"

	tests := []struct {
		name        string
		query       string
		auth        []string
		contentType string
		body        string
		wantStatus  int
		wantError   string // WWW-Authenticate error attribute; "" wants none
		wantDesc    string
		wantBody    string // for 200: the body next saw
	}{
		{name: "valid", auth: []string{"Bearer " + good}, contentType: jsonType, body: `{"jsonrpc":"2.0"}`,
			wantStatus: 200, wantBody: `{"jsonrpc":"2.0"}`},
		{name: "scheme in lower case", auth: []string{"bearer " + good}, wantStatus: 200},
		{name: "JSON body naming access_token is not consumed", auth: []string{"Bearer " + good}, contentType: jsonType,
			body: `{"access_token":"x"}`, wantStatus: 200, wantBody: `{"access_token":"x"}`},
		{name: "form body without token passes intact", auth: []string{"Bearer " + good}, contentType: formType,
			body: "a=1&b=2", wantStatus: 200, wantBody: "a=1&b=2"},
		{name: "no Authorization header", wantStatus: 401},
		{name: "Basic credentials", auth: []string{"Basic dXNlcjpwYXNz"}, wantStatus: 401},
		{name: "Bearer without token", auth: []string{"Bearer"}, wantStatus: 401, wantError: "invalid_token", wantDesc: "no token"},
		{name: "token with a space", auth: []string{"Bearer abc def"}, wantStatus: 401, wantError: "invalid_token", wantDesc: "malformed"},
		{name: "garbage token", auth: []string{"Bearer abc.def.ghi"}, wantStatus: 401, wantError: "invalid_token", wantDesc: "malformed token"},
		{name: "expired token", auth: []string{"Bearer " + expired}, wantStatus: 401, wantError: "invalid_token", wantDesc: "token expired"},
		{name: "two Authorization headers", auth: []string{"Bearer " + good, "Bearer " + good}, wantStatus: 401,
			wantError: "invalid_token", wantDesc: "more than one"},
		{name: "token in query", query: "access_token=" + good, wantStatus: 400, wantError: "invalid_request",
			wantDesc: "send the token in the Authorization header"},
		{name: "token in query besides a good header", query: "x=1&access_token=" + good, auth: []string{"Bearer " + good},
			wantStatus: 400, wantError: "invalid_request", wantDesc: "query string"},
		{name: "token in form body", contentType: formType + "; charset=utf-8", body: "access_token=" + good,
			wantStatus: 400, wantError: "invalid_request", wantDesc: "form body"},
		{name: "oversized form body", auth: []string{"Bearer " + good}, contentType: formType,
			body: "a=" + strings.Repeat("x", 70<<10), wantStatus: 413, wantError: "invalid_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp?"+tc.query, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.auth {
				req.Header.Add("Authorization", a)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, raw)
			}
			if strings.Contains(string(raw), good) || strings.Contains(resp.Header.Get("WWW-Authenticate"), good) {
				t.Error("response echoes the token")
			}
			var body map[string]string
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("body %q is not JSON: %v", raw, err)
			}
			if tc.wantStatus == 200 {
				if body["sub"] != "user-1" || body["body"] != tc.wantBody {
					t.Errorf("next saw %v", body)
				}
				return
			}
			checkChallenge(t, resp.Header.Get("WWW-Authenticate"), rs, tc.wantError, tc.wantDesc)
			if tc.wantError != "" && (body["error"] != tc.wantError || body["error_description"] == "") {
				t.Errorf("body = %v", body)
			}
		})
	}
}

// checkChallenge asserts h is one Bearer challenge pointing at rs's
// metadata, with the error attribute wantError (none when empty).
func checkChallenge(t *testing.T, h string, rs *resource.Server, wantError, wantDesc string) {
	t.Helper()
	cs, err := resource.ParseChallenges(h)
	if err != nil || len(cs) != 1 || !strings.EqualFold(cs[0].Scheme, "Bearer") {
		t.Fatalf("WWW-Authenticate %q: %v, %v", h, cs, err)
	}
	p := cs[0].Params
	if p["resource_metadata"] != rs.MetadataURL() {
		t.Errorf("resource_metadata = %q, want %q", p["resource_metadata"], rs.MetadataURL())
	}
	if wantError == "" {
		if _, ok := p["error"]; ok {
			t.Errorf("challenge %q has an error attribute", h)
		}
		if p["scope"] != strings.Join(auth.AllScopes, " ") {
			t.Errorf("scope hint = %q", p["scope"])
		}
		return
	}
	if p["error"] != wantError || !strings.Contains(p["error_description"], wantDesc) {
		t.Errorf("challenge %q: want error %q with description containing %q", h, wantError, wantDesc)
	}
}

func TestAuthenticateVerifierUnavailable(t *testing.T) {
	t.Parallel()
	is := newIntrospectionServer(t)
	is.answer("tok", map[string]any{"status": 500})
	_, srv, _ := newServer(t, is.verifier(nil))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("WWW-Authenticate") != "" {
		t.Fatalf("status %d, WWW-Authenticate %q; want 503 without a challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func TestWriteInsufficientScope(t *testing.T) {
	t.Parallel()
	rs, _, _ := newServer(t, nil)
	rec := httptest.NewRecorder()
	rs.WriteInsufficientScope(rec, []string{auth.ScopeExec, auth.ScopeFilesWrite})
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status = %d", rec.Code)
	}
	h := rec.Header().Get("WWW-Authenticate")
	checkChallenge(t, h, rs, "insufficient_scope", auth.ScopeExec)
	cs, _ := resource.ParseChallenges(h)
	if got := cs[0].Params["scope"]; got != auth.ScopeExec+" "+auth.ScopeFilesWrite {
		t.Errorf("scope = %q", got)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "insufficient_scope" {
		t.Errorf("body %q: %v", rec.Body, err)
	}
}
