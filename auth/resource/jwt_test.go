package resource_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

func TestJWTVerifyAcceptsEachAlgorithm(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"RS256", "ES256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			is := newIssuer(t, "")
			key := newKey(t, alg, "k-"+alg)
			is.publish(key)
			v := is.verifier(t, nil)
			id, err := v.Verify(t.Context(), sign(t, key, claims(is.URL())))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if id.Issuer != is.URL() || id.Subject != "user-1" || id.Tenant != "user-1" || id.ClientID != "client-1" {
				t.Errorf("identity = %+v", id)
			}
			if !id.HasScope(auth.ScopeExec) || !id.HasScope(auth.ScopeFilesRead) || len(id.Scopes) != 2 {
				t.Errorf("scopes = %v", id.Scopes)
			}
			if !slices.Equal(id.Audience, []string{audience}) || time.Until(id.ExpiresAt) < 59*time.Minute {
				t.Errorf("audience %v, expires %v", id.Audience, id.ExpiresAt)
			}
		})
	}
}

func TestJWTVerifyRejects(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, "")
	rsaKey, ecKey := newKey(t, "RS256", "rsa"), newKey(t, "ES256", "ec")
	is.publish(rsaKey, ecKey)
	v := is.verifier(t, func(c *resource.JWTConfig) { c.Leeway = 5 * time.Second })
	good := claims(is.URL())
	now := time.Now()

	pubDER, err := x509.MarshalPKIXPublicKey(rsaKey.public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hmacWith := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, good)
		tok.Header["kid"] = rsaKey.kid
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	none := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, good)
		tok.Header["kid"] = rsaKey.kid
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	withHeader := func(key testKey, name string, value any) string {
		tok := jwt.NewWithClaims(key.method, good)
		tok.Header["kid"] = key.kid
		tok.Header[name] = value
		s, err := tok.SignedString(key.priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	stranger := newKey(t, "RS256", rsaKey.kid) // same kid, unpublished key
	noKid := rsaKey
	noKid.kid = ""
	tampered := sign(t, rsaKey, good)
	parts := strings.Split(tampered, ".")
	parts[1] = strings.Split(sign(t, rsaKey, with(good, map[string]any{"sub": "admin"})), ".")[1]
	tampered = strings.Join(parts, ".")

	tests := []struct {
		name, token, reason string
	}{
		{"wrong issuer", sign(t, rsaKey, with(good, map[string]any{"iss": "https://evil.example"})), "another issuer"},
		{"no issuer", sign(t, rsaKey, with(good, map[string]any{"iss": nil})), "no iss claim"},
		{"wrong audience", sign(t, rsaKey, with(good, map[string]any{"aud": "https://other.example/mcp"})), "not for this resource"},
		{"no audience", sign(t, rsaKey, with(good, map[string]any{"aud": nil})), "no aud claim"},
		{"missing exp", sign(t, rsaKey, with(good, map[string]any{"exp": nil})), "no exp claim"},
		{"expired", sign(t, rsaKey, with(good, map[string]any{"exp": now.Add(-time.Minute).Unix()})), "expired"},
		{"nbf in future", sign(t, rsaKey, with(good, map[string]any{"nbf": now.Add(time.Minute).Unix()})), "not valid yet"},
		{"iat in future", sign(t, rsaKey, with(good, map[string]any{"iat": now.Add(time.Minute).Unix()})), "issued in the future"},
		{"no sub", sign(t, rsaKey, with(good, map[string]any{"sub": nil})), "no sub claim"},
		{"alg none", none(), "algorithm is not accepted"},
		{"HS256 keyed with public key PEM", hmacWith(pubPEM), "algorithm is not accepted"},
		{"HS256 keyed with public key DER", hmacWith(pubDER), "algorithm is not accepted"},
		{"unknown alg", withHeader(rsaKey, "alg", "PS256"), "algorithm is not accepted"},
		{"kid of another key type", withHeader(rsaKey, "kid", ecKey.kid), "alg does not match its key"},
		{"signed by unpublished key", sign(t, stranger, good), "bad token signature"},
		{"tampered payload", tampered, "bad token signature"},
		{"no kid with two keys", sign(t, noKid, good), "no kid"},
		{"crit header", withHeader(rsaKey, "crit", []string{"exp"}), "critical header"},
		{"malformed", "abc.def.ghi", "malformed"},
		{"empty", "", "empty token"},
		{"too large", strings.Repeat("a", 20000), "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(t.Context(), tc.token)
			if !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("Verify err = %v, want ErrInvalidToken", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Verify err = %q, want reason %q", err, tc.reason)
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Errorf("error echoes the token")
			}
		})
	}
}

func TestJWTVerifyLeeway(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, "")
	key := newKey(t, "ES256", "")
	is.publish(key)
	v := is.verifier(t, nil) // default leeway 30s; one key, so no kid needed
	now := time.Now()
	skewed := with(claims(is.URL()), map[string]any{
		"exp": now.Add(-10 * time.Second).Unix(),
		"nbf": now.Add(10 * time.Second).Unix(),
		"iat": now.Add(10 * time.Second).Unix(),
	})
	if _, err := v.Verify(t.Context(), sign(t, key, skewed)); err != nil {
		t.Fatalf("Verify within leeway: %v", err)
	}
}

func TestJWTVerifyClaimForms(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, "")
	key := newKey(t, "EdDSA", "ed")
	is.publish(key)
	tests := []struct {
		name        string
		tenantClaim string
		changes     map[string]any
		wantTenant  string
		wantClient  string
		wantScopes  []string
		wantErr     string
	}{
		{name: "scp array and azp", changes: map[string]any{"scope": nil, "scp": []string{"a", "b"}, "client_id": nil, "azp": "app"},
			wantTenant: "user-1", wantClient: "app", wantScopes: []string{"a", "b"}},
		{name: "aud string", changes: map[string]any{"aud": audience, "scope": "x"},
			wantTenant: "user-1", wantClient: "client-1", wantScopes: []string{"x"}},
		{name: "tenant claim", tenantClaim: "org", changes: map[string]any{"org": "acme"},
			wantTenant: "acme", wantClient: "client-1", wantScopes: []string{auth.ScopeExec, auth.ScopeFilesRead}},
		{name: "tenant claim missing", tenantClaim: "org", wantErr: "no org claim"},
		{name: "tenant claim not a string", tenantClaim: "org", changes: map[string]any{"org": 7}, wantErr: "no org claim"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := is.verifier(t, func(c *resource.JWTConfig) { c.TenantClaim = tc.tenantClaim })
			id, err := v.Verify(t.Context(), sign(t, key, with(claims(is.URL()), tc.changes)))
			if tc.wantErr != "" {
				if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Verify err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if id.Tenant != tc.wantTenant || id.ClientID != tc.wantClient || !slices.Equal(id.Scopes, tc.wantScopes) {
				t.Errorf("identity = %+v", id)
			}
		})
	}
}

func TestNewJWTVerifierConfig(t *testing.T) {
	t.Parallel()
	key := newKey(t, "ES256", "k")
	keys := staticKeys{{ID: "k", Key: key.public()}}
	tests := []struct {
		name string
		cfg  resource.JWTConfig
	}{
		{"no issuer", resource.JWTConfig{Audience: audience, Keys: keys}},
		{"no audience", resource.JWTConfig{Issuer: "https://issuer.example", Keys: keys}},
		{"negative leeway", resource.JWTConfig{Issuer: "https://issuer.example", Audience: audience, Keys: keys, Leeway: -time.Second}},
		{"no usable key", resource.JWTConfig{Issuer: "https://issuer.example", Audience: audience,
			Keys: staticKeys{{ID: "k", Algorithm: "RS256", Key: key.public()}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := resource.NewJWTVerifier(t.Context(), tc.cfg); err == nil {
				t.Fatal("NewJWTVerifier succeeded")
			}
		})
	}
}
