package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// wellKnownPRM is the RFC 9728 well-known path suffix.
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// Config configures a Server.
type Config struct {
	// Resource is the canonical URI of the MCP endpoint, e.g.
	// http://127.0.0.1:8080/mcp: tokens must carry it in "aud" and clients
	// send it as the RFC 8707 resource parameter.
	Resource             string
	AuthorizationServers []string // issuer URLs listed in the metadata; at least one
	ScopesSupported      []string
	ResourceName         string // human-readable, shown by clients
	Verifier             Verifier
	Logger               *slog.Logger // default: discard
}

// Server is the gateway in its role of OAuth protected resource: it serves
// the resource metadata and guards handlers with bearer token checks.
type Server struct {
	cfg         Config
	metadataURL string
	metadata    []byte // the PRM document, rendered once
	// paths are the two request paths the metadata is served at.
	paths [2]string
}

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	u, err := url.Parse(cfg.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		// RFC 8707 §2: an absolute URI without fragment; we also refuse a
		// query so that the well-known URL has one obvious form.
		return nil, fmt.Errorf("new resource server: resource %q is not an http(s) URL without query or fragment", cfg.Resource)
	}
	if cfg.Verifier == nil {
		return nil, errors.New("new resource server: no verifier")
	}
	if len(cfg.AuthorizationServers) == 0 {
		return nil, errors.New("new resource server: no authorization server")
	}
	for _, as := range cfg.AuthorizationServers {
		if _, err := metadataURLs(as); err != nil {
			return nil, fmt.Errorf("new resource server: authorization server: %w", err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		cfg.Logger.Warn("protected resource is served over plain http; tokens can be stolen in transit", "resource", cfg.Resource)
	}
	// RFC 9728 §3.1: the well-known segment goes between host and path.
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	s := &Server{
		cfg:         cfg,
		metadataURL: u.Scheme + "://" + u.Host + wellKnownPRM + path,
		paths:       [2]string{wellKnownPRM, wellKnownPRM + path},
	}
	s.metadata, err = json.Marshal(struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceName           string   `json:"resource_name,omitempty"`
	}{cfg.Resource, cfg.AuthorizationServers, cfg.ScopesSupported, []string{"header"}, cfg.ResourceName})
	if err != nil {
		return nil, fmt.Errorf("new resource server: render metadata: %w", err)
	}
	return s, nil
}

// MetadataURL returns the URL of the resource metadata in the RFC 9728
// path-inserted form, as sent in resource_metadata challenge parameters.
func (s *Server) MetadataURL() string { return s.metadataURL }

// MetadataHandler serves the protected resource metadata at
// /.well-known/oauth-protected-resource and at its path-inserted form for
// the resource (…/oauth-protected-resource/mcp); other paths get 404, so
// the handler may be mounted on the whole well-known prefix. Older MCP
// clients look only at the bare path, newer ones first at the inserted one.
func (s *Server) MetadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != s.paths[0] && r.URL.Path != s.paths[1] {
			http.NotFound(w, r)
			return
		}
		// The document is public; browser-based clients fetch it cross-origin.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			w.Header().Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(s.metadata)
	})
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
