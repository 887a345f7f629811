package resource_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

func TestMetadataURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ resource, want string }{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
		{"https://gw.example", "https://gw.example/.well-known/oauth-protected-resource"},
		{"https://gw.example/", "https://gw.example/.well-known/oauth-protected-resource"},
		{"https://gw.example/a/mcp/", "https://gw.example/.well-known/oauth-protected-resource/a/mcp"},
	}
	for _, tc := range tests {
		rs, err := resource.New(resource.Config{Resource: tc.resource, AuthorizationServers: []string{testIssuerURL}, Verifier: resource.Chain(nil, nil)})
		if err != nil {
			t.Fatalf("New(%s): %v", tc.resource, err)
		}
		if got := rs.MetadataURL(); got != tc.want {
			t.Errorf("MetadataURL(%s) = %s, want %s", tc.resource, got, tc.want)
		}
	}
}

func TestNewRejectsConfig(t *testing.T) {
	t.Parallel()
	v := resource.Chain(nil, nil)
	tests := []struct {
		name string
		cfg  resource.Config
	}{
		{"relative resource", resource.Config{Resource: "/mcp", AuthorizationServers: []string{testIssuerURL}, Verifier: v}},
		{"resource with fragment", resource.Config{Resource: "https://gw.example/mcp#x", AuthorizationServers: []string{testIssuerURL}, Verifier: v}},
		{"resource with query", resource.Config{Resource: "https://gw.example/mcp?x=1", AuthorizationServers: []string{testIssuerURL}, Verifier: v}},
		{"ftp resource", resource.Config{Resource: "ftp://gw.example/mcp", AuthorizationServers: []string{testIssuerURL}, Verifier: v}},
		{"no verifier", resource.Config{Resource: audience, AuthorizationServers: []string{testIssuerURL}}},
		{"no authorization server", resource.Config{Resource: audience, Verifier: v}},
		{"bad authorization server", resource.Config{Resource: audience, AuthorizationServers: []string{"issuer"}, Verifier: v}},
	}
	for _, tc := range tests {
		if _, err := resource.New(tc.cfg); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}

func TestMetadataHandler(t *testing.T) {
	t.Parallel()
	rs, _, _ := newServer(t, nil)
	h := rs.MetadataHandler()
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		t.Run(path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			var md struct {
				Resource               string   `json:"resource"`
				AuthorizationServers   []string `json:"authorization_servers"`
				ScopesSupported        []string `json:"scopes_supported"`
				BearerMethodsSupported []string `json:"bearer_methods_supported"`
				ResourceName           string   `json:"resource_name"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil {
				t.Fatal(err)
			}
			if md.Resource != audience || !slices.Equal(md.AuthorizationServers, []string{testIssuerURL}) ||
				!slices.Equal(md.ScopesSupported, auth.AllScopes) || !slices.Equal(md.BearerMethodsSupported, []string{"header"}) ||
				md.ResourceName != "Sandgate" {
				t.Errorf("metadata = %+v", md)
			}
		})
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/.well-known/oauth-protected-resource/other", http.StatusNotFound},
		{http.MethodPost, "/.well-known/oauth-protected-resource", http.StatusMethodNotAllowed},
		{http.MethodOptions, "/.well-known/oauth-protected-resource/mcp", http.StatusNoContent},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, rec.Code, tc.want)
		}
	}
}
