package resource_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

const (
	rsClientID     = "gateway"
	rsClientSecret = "s3cr:et/+"
	introIssuer    = "https://as.example"
)

// introspectionServer is a real RFC 7662 endpoint answering from a table
// of token → response.
type introspectionServer struct {
	srv   *httptest.Server
	calls atomic.Int32

	mu      sync.Mutex
	answers map[string]map[string]any
}

func newIntrospectionServer(t *testing.T) *introspectionServer {
	s := &introspectionServer{answers: map[string]map[string]any{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != rsClientID || secret != strings.NewReplacer(":", "%3A", "/", "%2F", "+", "%2B").Replace(rsClientSecret) {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		answer, ok := s.answers[r.PostFormValue("token")]
		s.mu.Unlock()
		if !ok {
			answer = map[string]any{"active": false}
		}
		if answer["status"] == 500 {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *introspectionServer) answer(token string, resp map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[token] = resp
}

func (s *introspectionServer) verifier(mod func(*resource.IntrospectionConfig)) *resource.IntrospectionVerifier {
	cfg := resource.IntrospectionConfig{
		Endpoint: s.srv.URL, ClientID: rsClientID, ClientSecret: rsClientSecret,
		Issuer: introIssuer, Audience: audience, HTTPClient: s.srv.Client(),
	}
	if mod != nil {
		mod(&cfg)
	}
	return resource.NewIntrospectionVerifier(cfg)
}

func activeAnswer(changes map[string]any) map[string]any {
	a := map[string]any{
		"active": true, "iss": introIssuer, "sub": "user-9", "aud": audience,
		"client_id": "cli", "scope": auth.ScopeBrowser, "exp": time.Now().Add(time.Hour).Unix(), "org": "acme",
	}
	for k, v := range changes {
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	return a
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		answer  map[string]any
		mod     func(*resource.IntrospectionConfig)
		wantErr string // "" accepts; "unavailable" wants a non-invalid error
	}{
		{name: "active", answer: activeAnswer(nil)},
		{name: "active without iss", answer: activeAnswer(map[string]any{"iss": nil})},
		{name: "aud array", answer: activeAnswer(map[string]any{"aud": []string{"x", audience}})},
		{name: "inactive", answer: map[string]any{"active": false}, wantErr: "not active"},
		{name: "active not a bool", answer: activeAnswer(map[string]any{"active": "true"}), wantErr: "not active"},
		{name: "aud mismatch", answer: activeAnswer(map[string]any{"aud": "https://other.example/mcp"}), wantErr: "not for this resource"},
		{name: "no aud", answer: activeAnswer(map[string]any{"aud": nil}), wantErr: "not for this resource"},
		{name: "iss mismatch", answer: activeAnswer(map[string]any{"iss": "https://evil.example"}), wantErr: "another issuer"},
		{name: "expired", answer: activeAnswer(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}), wantErr: "expired"},
		{name: "nbf in future", answer: activeAnswer(map[string]any{"nbf": time.Now().Add(time.Minute).Unix()}), wantErr: "not valid yet"},
		{name: "no sub", answer: activeAnswer(map[string]any{"sub": nil}), wantErr: "no sub"},
		{name: "tenant claim missing", answer: activeAnswer(map[string]any{"org": nil}),
			mod: func(c *resource.IntrospectionConfig) { c.TenantClaim = "org" }, wantErr: "no org claim"},
		{name: "endpoint down", answer: map[string]any{"status": 500}, wantErr: "unavailable"},
		{name: "wrong client secret", answer: activeAnswer(nil),
			mod: func(c *resource.IntrospectionConfig) { c.ClientSecret = "nope" }, wantErr: "unavailable"},
		{name: "no audience configured", answer: activeAnswer(nil),
			mod: func(c *resource.IntrospectionConfig) { c.Audience = "" }, wantErr: "unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newIntrospectionServer(t)
			const token = "opaque-token-value"
			s.answer(token, tc.answer)
			id, err := s.verifier(tc.mod).Verify(t.Context(), token)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Verify: %v", err)
			case tc.wantErr == "":
				if id.Subject != "user-9" || id.Issuer != introIssuer || id.ClientID != "cli" || !id.HasScope(auth.ScopeBrowser) {
					t.Errorf("identity = %+v", id)
				}
			case tc.wantErr == "unavailable":
				if err == nil || errors.Is(err, auth.ErrInvalidToken) {
					t.Fatalf("err = %v, want a non-invalid error", err)
				}
			default:
				if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			}
			if err != nil && strings.Contains(err.Error(), token) {
				t.Error("error echoes the token")
			}
		})
	}
}

func TestIntrospectionTenantClaim(t *testing.T) {
	t.Parallel()
	s := newIntrospectionServer(t)
	s.answer("t", activeAnswer(nil))
	id, err := s.verifier(func(c *resource.IntrospectionConfig) { c.TenantClaim = "org" }).Verify(t.Context(), "t")
	if err != nil || id.Tenant != "acme" {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
}

func TestIntrospectionCache(t *testing.T) {
	t.Parallel()
	s := newIntrospectionServer(t)
	v := s.verifier(func(c *resource.IntrospectionConfig) { c.CacheTTL = time.Hour })

	s.answer("active", activeAnswer(nil))
	for range 3 {
		if _, err := v.Verify(t.Context(), "active"); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("active token introspected %d times, want 1", n)
	}

	s.calls.Store(0)
	for range 2 {
		if _, err := v.Verify(t.Context(), "unknown"); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("inactive: err = %v", err)
		}
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("inactive token introspected %d times, want 2 (never cached)", n)
	}

	// A cached answer never outlives the token's exp, whatever CacheTTL says.
	s.calls.Store(0)
	exp := float64(time.Now().Add(300*time.Millisecond).UnixMilli()) / 1000
	s.answer("short", activeAnswer(map[string]any{"exp": exp}))
	if _, err := v.Verify(t.Context(), "short"); err != nil {
		t.Fatalf("short-lived token: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := v.Verify(t.Context(), "short"); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("short-lived token after exp: err = %v, want invalid", err)
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("short-lived token introspected %d times, want 2", n)
	}
}

func TestIntrospectionCacheDisabled(t *testing.T) {
	t.Parallel()
	s := newIntrospectionServer(t)
	s.answer("t", activeAnswer(nil))
	v := s.verifier(func(c *resource.IntrospectionConfig) { c.CacheTTL = -1 })
	for range 2 {
		if _, err := v.Verify(t.Context(), "t"); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("introspected %d times, want 2", n)
	}
}
