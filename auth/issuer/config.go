package issuer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// Config configures the embedded authorization server.
type Config struct {
	// Issuer is the public base URL, e.g. https://gw.example.com. It must
	// be an origin (no path): every endpoint is served at the origin's root.
	// http is accepted only for loopback hosts.
	Issuer string
	// Resources lists the accepted RFC 8707 resource values, e.g.
	// http://127.0.0.1:8080/mcp. The first is used when a client names none.
	Resources []string
	// Dir is the state directory (keys, clients, refresh tokens, users).
	// It is created 0700; files in it are written 0600.
	Dir string
	// Scopes are the grantable scopes; auth.AllScopes when empty. openid
	// and offline_access are protocol scopes and always accepted.
	Scopes []string
	// AccessTokenTTL is the lifetime of access (and ID) tokens; 10m by default.
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is how long an unused refresh token stays valid; each
	// rotation starts a new period. 30 days by default.
	RefreshTokenTTL time.Duration
	// DevMode accepts http://localhost client ID metadata document URLs.
	DevMode bool
	// ClientFetcher resolves a client ID metadata document (the client_id
	// is an https URL). nil disables such clients.
	ClientFetcher func(ctx context.Context, clientID string) (auth.ClientRecord, error)
	// RegisterHandler builds the RFC 7591 registration handler served at
	// /register on top of the issuer's client store. nil disables DCR.
	RegisterHandler func(store auth.ClientStore) http.Handler
	// Logger receives operator logs; slog.Default() when nil.
	Logger *slog.Logger
}

const (
	defaultAccessTokenTTL  = 10 * time.Minute
	defaultRefreshTokenTTL = 30 * 24 * time.Hour
)

// withDefaults returns a copy of c with empty fields filled in, or an
// error that says which field is wrong and how to fix it.
func (c Config) withDefaults() (Config, error) {
	if err := checkIssuer(c.Issuer); err != nil {
		return c, err
	}
	if len(c.Resources) == 0 {
		return c, fmt.Errorf("issuer: Config.Resources is empty: list the gateway's MCP endpoint, e.g. %s/mcp", c.Issuer)
	}
	for _, r := range c.Resources {
		if err := checkResourceURI(r); err != nil {
			return c, fmt.Errorf("issuer: Config.Resources: %w", err)
		}
	}
	if c.Dir == "" {
		return c, errors.New("issuer: Config.Dir is empty: give a state directory such as var/auth")
	}
	if len(c.Scopes) == 0 {
		c.Scopes = slices.Clone(auth.AllScopes)
	}
	for _, s := range c.Scopes {
		if isProtocolScope(s) {
			return c, fmt.Errorf("issuer: Config.Scopes: %q is a protocol scope and is always accepted; leave it out", s)
		}
	}
	if c.AccessTokenTTL <= 0 {
		c.AccessTokenTTL = defaultAccessTokenTTL
	}
	if c.RefreshTokenTTL <= 0 {
		c.RefreshTokenTTL = defaultRefreshTokenTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// checkIssuer accepts an https origin, or an http origin on a loopback
// host. The issuer is compared byte for byte by every verifier, so it must
// have no path, not even a trailing slash.
func checkIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return fmt.Errorf("issuer: Config.Issuer %q is not an absolute URL such as https://gw.example.com", issuer)
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("issuer: Config.Issuer %q must be an origin only (scheme://host[:port], no path, query or trailing slash)", issuer)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("issuer: Config.Issuer %q uses http on a non-loopback host: use https (http is allowed only for localhost, 127.0.0.0/8 and ::1)", issuer)
	}
	return fmt.Errorf("issuer: Config.Issuer %q must use https (or http on a loopback host)", issuer)
}

// checkResourceURI applies RFC 8707 §2 (absolute URI, no fragment) and the
// same transport rule as the issuer.
func checkResourceURI(r string) error {
	u, err := url.Parse(r)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("resource %q is not an absolute URL", r)
	}
	if u.Fragment != "" || u.User != nil {
		return fmt.Errorf("resource %q must not have a fragment or user info", r)
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !isLoopbackHost(u.Hostname())) {
		return fmt.Errorf("resource %q must use https (http only on a loopback host)", r)
	}
	return nil
}

// isLoopbackHost reports whether host is "localhost" or a loopback IP
// literal.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
