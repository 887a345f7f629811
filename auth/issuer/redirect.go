package issuer

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// checkRedirectURI decides whether requested may receive the
// authorization response of a client that registered registered.
//
// The policy: the requested URI must equal a registered one byte for byte
// (no prefix, wildcard or normalisation). The one exception is RFC 8252
// §7.3: when a registered URI is http on a loopback IP literal (127.0.0.1
// or [::1]), a native app may use any port, because it binds an ephemeral
// one; scheme, host, path and query must still be equal. "localhost" gets
// no such leeway: RFC 8252 §8.3 advises against it, as the name may not
// resolve to the loopback interface. Whatever the registration says,
// http is only ever accepted on loopback hosts, and URIs with a fragment
// or an active-content scheme are refused.
func checkRedirectURI(registered []string, requested string) error {
	u, err := url.Parse(requested)
	if err != nil || !u.IsAbs() {
		return errors.New("redirect_uri is not an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(requested, "#") {
		return errors.New("redirect_uri must not have a fragment")
	}
	switch strings.ToLower(u.Scheme) {
	case "javascript", "data", "vbscript", "file", "blob":
		return errors.New("redirect_uri scheme is not allowed")
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return errors.New("an http redirect_uri must be on a loopback host")
		}
	}
	for _, reg := range registered {
		if reg == requested || loopbackPortVariant(reg, u) {
			return nil
		}
	}
	return errors.New("redirect_uri does not match any registered redirect URI")
}

// loopbackPortVariant reports whether req differs from the registered URI
// reg in the port only, reg being http on a loopback IP literal.
func loopbackPortVariant(reg string, req *url.URL) bool {
	r, err := url.Parse(reg)
	if err != nil || r.Scheme != "http" || req.Scheme != "http" {
		return false
	}
	ip := net.ParseIP(r.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return false
	}
	return r.Hostname() == req.Hostname() && r.User == nil && req.User == nil &&
		r.EscapedPath() == req.EscapedPath() && r.RawQuery == req.RawQuery &&
		!r.ForceQuery && !req.ForceQuery
}

// redirectToClient sends the browser to the client's redirect URI with
// params added to its query. Every authorization response, success or
// error, goes through here so each one carries iss (RFC 9207): zitadel
// adds it to neither. A client talking to several authorization servers
// uses it to tell which one answered (mix-up attacks).
func (s *Server) redirectToClient(w http.ResponseWriter, r *http.Request, redirectURI string, params url.Values, status int) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		// Checked at /authorize; a failure here is a bug, not a client error.
		s.problem(w, r, http.StatusInternalServerError, "The application's redirect address is invalid.")
		return
	}
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	q.Set("iss", s.cfg.Issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), status)
}

// redirectError sends an authorization error response (RFC 6749 §4.1.2.1).
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirectURI, state string, e *oidc.Error, status int) {
	params := url.Values{"error": {string(e.ErrorType)}}
	if e.Description != "" {
		params.Set("error_description", e.Description)
	}
	if state != "" {
		params.Set("state", state)
	}
	s.log.InfoContext(r.Context(), "authorization refused", "error", string(e.ErrorType), "reason", e.Description)
	s.redirectToClient(w, r, redirectURI, params, status)
}
