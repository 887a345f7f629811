package resource_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth/resource"
)

func TestDiscoveryLocations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, issuerPath, metaPath string
	}{
		{"RFC 8414 at root", "", "/.well-known/oauth-authorization-server"},
		{"OIDC at root", "", "/.well-known/openid-configuration"},
		{"RFC 8414 path insertion", "/tenants/a", "/.well-known/oauth-authorization-server/tenants/a"},
		{"OIDC path insertion", "/tenants/a", "/.well-known/openid-configuration/tenants/a"},
		{"OIDC path appending", "/tenants/a", "/tenants/a/.well-known/openid-configuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			is := newIssuer(t, tc.issuerPath, tc.metaPath)
			key := newKey(t, "ES256", "k")
			is.publish(key)
			v := is.verifier(t, nil)
			if _, err := v.Verify(t.Context(), sign(t, key, claims(is.URL()))); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

func TestDiscoveryFailures(t *testing.T) {
	t.Parallel()
	metadata := func(body map[string]any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(body) }
	}
	tests := []struct {
		name    string
		handler func(srvURL string) http.Handler
		want    string
	}{
		{"no metadata anywhere", func(string) http.Handler { return http.NotFoundHandler() }, "none of"},
		{"metadata names another issuer", func(string) http.Handler {
			return metadata(map[string]any{"issuer": "https://evil.example", "jwks_uri": "https://evil.example/jwks"})
		}, "names issuer"},
		{"no jwks_uri", func(u string) http.Handler { return metadata(map[string]any{"issuer": u}) }, "jwks_uri"},
		{"server error", func(string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
		}, "500"},
		{"JWKS missing", func(u string) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/.well-known/oauth-authorization-server", metadata(map[string]any{"issuer": u, "jwks_uri": u + "/jwks"}))
			return mux
		}, "fetch JWKS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h http.Handler
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
			t.Cleanup(srv.Close)
			h = tc.handler(srv.URL)
			_, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{Issuer: srv.URL, Audience: audience})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewJWTVerifier err = %v, want %q", err, tc.want)
			}
		})
	}
}
