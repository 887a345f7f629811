package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
)

// maxFormBytes bounds how much of a form-encoded body Authenticate reads
// while looking for a token in it. MCP bodies are JSON, so a form body is
// never legitimate here; the bound keeps looking at one cheap.
const maxFormBytes = 64 << 10

type identityKey struct{}

// IdentityFrom returns the identity Authenticate put in ctx.
func IdentityFrom(ctx context.Context) (identity.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(identity.Identity)
	return id, ok
}

// Authenticate returns a handler that lets a request through to next only
// with a valid bearer token in its Authorization header, and puts the
// token's identity in the request context (see IdentityFrom). Otherwise it
// answers with a challenge pointing at the resource metadata:
//   - 400 invalid_request when a token is sent in the query string or a
//     form body (RFC 6750 §2.2, §2.3 are not supported);
//   - 401 without an error code when no Bearer credentials are present,
//     as RFC 6750 §3.1 asks, with a scope hint of all supported scopes;
//   - 401 invalid_token for malformed credentials or a rejected token;
//   - 503 when the token cannot be checked right now.
func (s *Server) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if where, err := tokenOutsideHeader(r); err != nil {
			s.deny(w, r, http.StatusRequestEntityTooLarge, "invalid_request", "form body too large or unreadable", nil)
			return
		} else if where != "" {
			s.deny(w, r, http.StatusBadRequest, "invalid_request",
				"do not put the access token in the "+where+"; send the token in the Authorization header as Bearer", nil)
			return
		}
		values := r.Header.Values("Authorization")
		if len(values) == 0 || !isBearerScheme(values[0]) {
			s.deny(w, r, http.StatusUnauthorized, "", "", nil)
			return
		}
		if len(values) > 1 {
			s.deny(w, r, http.StatusUnauthorized, "invalid_token", "more than one Authorization header", nil)
			return
		}
		token, err := ParseBearer(values[0])
		if err == nil {
			var id identity.Identity
			if id, err = s.cfg.Verifier.Verify(r.Context(), token); err == nil {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
				return
			}
		}
		if !errors.Is(err, auth.ErrInvalidToken) {
			// Verifier errors other than ErrInvalidToken carry no token
			// material (see Verifier), so they may be logged.
			s.cfg.Logger.Warn("cannot verify access token", "error", err)
			w.Header().Set("Retry-After", "5")
			writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "cannot verify the access token right now; retry later")
			return
		}
		s.deny(w, r, http.StatusUnauthorized, "invalid_token", reasonOf(err), nil)
	})
}

// WriteInsufficientScope answers 403 with a challenge naming the scopes
// the request needs (RFC 6750 §3.1, MCP scope step-up). Scope names come
// from the gateway's tool table, never from the request.
func (s *Server) WriteInsufficientScope(w http.ResponseWriter, required []string) {
	scope := strings.Join(required, " ")
	s.deny(w, nil, http.StatusForbidden, "insufficient_scope",
		"the access token lacks a required scope: "+scope, map[string]string{"scope": scope})
}

// deny writes a Bearer challenge and a short JSON body. An empty errCode
// is the no-credentials case: no error attribute, and a scope hint.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, status int, errCode, desc string, params map[string]string) {
	c := Challenge{Scheme: "Bearer", Params: map[string]string{"resource_metadata": s.metadataURL}}
	for k, v := range params {
		c.Params[k] = v
	}
	body := errCode
	if errCode == "" {
		body, desc = "unauthorized", "this endpoint needs an OAuth access token; the resource_metadata in WWW-Authenticate says where to get one"
		if len(s.cfg.ScopesSupported) > 0 {
			c.Params["scope"] = strings.Join(s.cfg.ScopesSupported, " ")
		}
	} else {
		c.Params["error"], c.Params["error_description"] = errCode, desc
	}
	w.Header().Set("WWW-Authenticate", c.String())
	if r != nil {
		// The path only: the query may hold a token.
		s.cfg.Logger.Debug("refuse request", "path", r.URL.Path, "status", status, "error", body, "reason", desc)
	}
	writeJSONError(w, status, body, desc)
}

func writeJSONError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

func isBearerScheme(h string) bool {
	scheme, _, _ := strings.Cut(h, " ")
	return strings.EqualFold(scheme, "Bearer")
}

// tokenOutsideHeader reports where, other than the Authorization header, r
// carries an access_token: "query string", "form body" or "". A form body
// is read (up to maxFormBytes) and put back for next; other bodies,
// notably JSON-RPC, are not touched.
func tokenOutsideHeader(r *http.Request) (string, error) {
	if q, _ := url.ParseQuery(r.URL.RawQuery); q.Has("access_token") {
		return "query string", nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" || r.Body == nil || r.Body == http.NoBody {
		return "", nil
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	if err != nil || len(buf) > maxFormBytes {
		return "", errors.New("form body unreadable or too large")
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	if f, _ := url.ParseQuery(string(buf)); f.Has("access_token") {
		return "form body", nil
	}
	return "", nil
}
