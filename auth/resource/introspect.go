package resource

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// IntrospectionConfig configures an IntrospectionVerifier.
type IntrospectionConfig struct {
	Endpoint string // the authorization server's RFC 7662 endpoint
	// ClientID and ClientSecret authenticate this resource to the endpoint
	// (client_secret_basic); both empty sends no credentials.
	ClientID     string
	ClientSecret string
	Issuer       string // when set, "iss" must be absent or equal it; it fills Identity.Issuer
	Audience     string // required: "aud" must contain it (RFC 8707)
	TenantClaim  string // claim for Identity.Tenant; default "sub"
	HTTPClient   *http.Client
	// CacheTTL is how long an active answer is reused, never past the
	// token's exp; default 30s, negative disables the cache. Revocation
	// takes up to this long to be noticed.
	CacheTTL time.Duration
}

// IntrospectionVerifier verifies opaque tokens by asking the authorization
// server (RFC 7662).
type IntrospectionVerifier struct {
	cfg   IntrospectionConfig
	cache *tokenCache
}

// NewIntrospectionVerifier returns a verifier for cfg. Missing Endpoint or
// Audience make every Verify fail with a configuration error rather than
// accept tokens unchecked.
func NewIntrospectionVerifier(cfg IntrospectionConfig) *IntrospectionVerifier {
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = "sub"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 30 * time.Second
	}
	return &IntrospectionVerifier{cfg: cfg, cache: newTokenCache()}
}

// Verify introspects token, or reuses a recent active answer for it.
func (v *IntrospectionVerifier) Verify(ctx context.Context, token string) (identity.Identity, error) {
	if v.cfg.Endpoint == "" || v.cfg.Audience == "" {
		return identity.Identity{}, errors.New("introspection verifier: endpoint and audience must be configured")
	}
	if token == "" {
		return identity.Identity{}, invalid("empty token")
	}
	if len(token) > maxTokenLen {
		return identity.Identity{}, invalid("token too large")
	}
	// The cache is keyed by a digest so that it never holds tokens.
	digest := sha256.Sum256([]byte(token))
	if id, _, ok := v.cache.get(digest); ok {
		return id, nil
	}
	claims, err := v.introspect(ctx, token)
	if err != nil {
		return identity.Identity{}, err
	}
	id, err := v.check(claims)
	if err != nil {
		return identity.Identity{}, err
	}
	if v.cfg.CacheTTL > 0 {
		until := time.Now().Add(v.cfg.CacheTTL)
		if !id.ExpiresAt.IsZero() && id.ExpiresAt.Before(until) {
			until = id.ExpiresAt
		}
		v.cache.put(digest, id, "", until)
	}
	return id, nil
}

// introspect POSTs token to the endpoint and decodes the answer.
func (v *IntrospectionVerifier) introspect(ctx context.Context, token string) (map[string]any, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.Endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("introspect token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if v.cfg.ClientID != "" || v.cfg.ClientSecret != "" {
		// RFC 6749 §2.3.1: form-encode both before Basic encoding.
		req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("introspect token: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("introspect token: status %s", resp.Status)
	}
	var claims map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&claims); err != nil {
		return nil, fmt.Errorf("introspect token: decode answer: %w", err)
	}
	return claims, nil
}

// check applies the resource's rules to an introspection answer.
func (v *IntrospectionVerifier) check(claims map[string]any) (identity.Identity, error) {
	if active, _ := claims["active"].(bool); !active {
		return identity.Identity{}, invalid("token is not active")
	}
	now := time.Now()
	if exp, ok := numericDate(claims["exp"]); ok && !now.Before(exp) {
		return identity.Identity{}, invalid("token expired")
	}
	if nbf, ok := numericDate(claims["nbf"]); ok && now.Before(nbf) {
		return identity.Identity{}, invalid("token is not valid yet (nbf)")
	}
	if iss, ok := claims["iss"]; ok && v.cfg.Issuer != "" && iss != v.cfg.Issuer {
		return identity.Identity{}, invalid("token is from another issuer")
	}
	if !slices.Contains(stringList(claims["aud"]), v.cfg.Audience) {
		return identity.Identity{}, invalid("token is not for this resource (aud)")
	}
	id, err := identityFromClaims(claims, v.cfg.TenantClaim)
	if err != nil {
		return identity.Identity{}, err
	}
	if id.Issuer == "" {
		id.Issuer = v.cfg.Issuer
	}
	return id, nil
}
