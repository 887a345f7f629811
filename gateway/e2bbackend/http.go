package e2bbackend

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway/e2b"
)

// apiKeyHeader carries an E2B API key on the control plane.
const apiKeyHeader = "X-API-KEY"

// Mount routes the E2B API's paths, and every request that names a
// sandbox by header (its data plane), to it; other requests go to next.
func (g *Server) Mount(mux *http.ServeMux, next http.Handler) http.Handler {
	api := g.cfg.Metrics.Instrument("e2b", g.e2b)
	for _, prefix := range e2b.ControlPrefixes {
		mux.Handle(prefix, api)
		if !strings.HasSuffix(prefix, "/") {
			mux.Handle(prefix+"/", api)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e2b.IsDataPlane(r) && r.URL.Path != "/mcp" {
			api.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticateAPI makes the caller of a control-plane request a
// Principal: by its API key (X-API-KEY, see auth/apikey) or, like /mcp,
// by an OAuth bearer token. With authentication off every caller is the
// local principal, whatever key it sends (the SDKs insist on one).
func (g *Server) authenticateAPI(next http.Handler) http.Handler {
	var bearer http.Handler
	if g.cfg.Auth != nil {
		bearer = g.cfg.Auth.Authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), bearerIdentity(r.Context()))))
		}))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(apiKeyHeader)
		switch {
		case key != "" && g.cfg.APIKey != nil:
			p, err := g.cfg.APIKey(key)
			if err != nil && g.cfg.Auth != nil {
				writeAPIError(w, http.StatusUnauthorized, "the API key is not valid: "+err.Error()+"; an operator issues keys with `gateway apikey add`")
				return
			}
			if err == nil {
				next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), p)))
				return
			}
		case bearer != nil && r.Header.Get("Authorization") != "":
			bearer.ServeHTTP(w, r)
			return
		}
		if g.cfg.Auth != nil {
			writeAPIError(w, http.StatusUnauthorized, "send an API key in X-API-KEY (E2B_API_KEY; an operator issues one with `gateway apikey add`) or an OAuth access token in Authorization: Bearer")
			return
		}
		next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), g.cfg.Local)))
	})
}

// writeAPIError answers in E2B's error shape.
func writeAPIError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": status, "message": msg})
}

// bearerIdentity is the identity the OAuth check in front put in ctx.
func bearerIdentity(ctx context.Context) identity.Identity {
	id, _ := resource.IdentityFrom(ctx)
	return id
}
