package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway"
)

// Authentication modes.
const (
	authEmbedded = "embedded" // the built-in authorization server issues tokens
	authExternal = "external" // tokens come from --issuer (Keycloak, Zitadel, Auth0, Okta, Dex...)
	authNone     = "none"     // no tokens; loopback only
)

// authDir is where the embedded authorization server keeps its state.
func authDir(varDir string) string { return filepath.Join(varDir, "auth") }

// setupAuth fills the authentication fields of gcfg for cfg's mode. It
// returns a cleanup func for what it started.
func setupAuth(ctx context.Context, cfg config, gcfg *gateway.Config, stderr io.Writer, log *slog.Logger) (func(), error) {
	if cfg.AuthMode == authNone {
		return func() {}, nil
	}
	base := strings.TrimSuffix(cfg.PublicURL, "/")
	resourceURI := base + "/mcp"
	var (
		issuerURL string
		keys      auth.KeySource
		cleanup   = func() {}
	)
	switch cfg.AuthMode {
	case authEmbedded:
		is, err := startIssuer(ctx, cfg, base, resourceURI, gcfg.VarDir, stderr, log)
		if err != nil {
			return nil, err
		}
		issuerURL, keys, cleanup = base, is, func() { is.Close() }
		gcfg.AuthServer, gcfg.AuthRoutes = is.Handler(), is.Routes()
	case authExternal:
		issuerURL = cfg.Issuer
	default:
		return nil, fmt.Errorf("--auth %q: want embedded, external or none", cfg.AuthMode)
	}
	var verifier resource.Verifier
	jwtcfg := resource.JWTConfig{Issuer: issuerURL, Audience: resourceURI, TenantClaim: cfg.TenantClaim, Keys: keys}
	if rs, ok := keys.(auth.RevocationSource); ok {
		// The embedded issuer: `gateway client revoke` stops a client's
		// access tokens at once, not at their expiry.
		jwtcfg.Revocations = rs
	}
	jwtv, err := resource.NewJWTVerifier(ctx, jwtcfg)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("set up token verification for issuer %s: %w", issuerURL, err)
	}
	verifier = jwtv
	if cfg.IntrospectionURL != "" {
		verifier = resource.Chain(jwtv, resource.NewIntrospectionVerifier(resource.IntrospectionConfig{
			Endpoint: cfg.IntrospectionURL, ClientID: cfg.IntrospectionClientID, ClientSecret: cfg.IntrospectionSecret,
			Issuer: issuerURL, Audience: resourceURI, TenantClaim: cfg.TenantClaim}))
	}
	rs, err := resource.New(resource.Config{Resource: resourceURI, AuthorizationServers: []string{issuerURL},
		ScopesSupported: auth.AllScopes, ResourceName: "Sandgate", Verifier: verifier, Logger: log})
	if err != nil {
		cleanup()
		return nil, err
	}
	gcfg.Auth = rs
	return cleanup, nil
}

// startIssuer starts the embedded authorization server, creating and
// printing the dev user's credentials on the first start in dev mode.
func startIssuer(ctx context.Context, cfg config, base, resourceURI, varDir string, stderr io.Writer, log *slog.Logger) (*issuer.Server, error) {
	dir := authDir(varDir)
	if cfg.Dev {
		user, password, created, err := issuer.EnsureDevUser(dir)
		if err != nil {
			return nil, fmt.Errorf("create dev user: %w", err)
		}
		if created {
			fmt.Fprintf(stderr, "\n  dev login for %s:  user %q  password %q\n  (shown once; stored bcrypt-hashed in %s)\n\n", base, user, password, dir)
		}
	}
	fetcher := clients.NewMetadataFetcher(clients.FetcherOptions{AllowLocalhost: cfg.Dev})
	return issuer.New(ctx, issuer.Config{
		Issuer:        base,
		Resources:     []string{resourceURI},
		Dir:           dir,
		DevMode:       cfg.Dev,
		ClientFetcher: fetcher.Fetch,
		RegisterHandler: func(store auth.ClientStore) http.Handler {
			return clients.RegistrationHandler(store, clients.RegistrationOptions{})
		},
		Logger: log,
	})
}
