package resource

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
)

// JWTConfig configures a JWTVerifier.
type JWTConfig struct {
	Issuer      string        // exact expected "iss"
	Audience    string        // this resource's canonical URI; "aud" must contain it (RFC 8707)
	TenantClaim string        // claim for Identity.Tenant; default "sub"
	Leeway      time.Duration // clock skew allowed for exp, nbf and iat; default 30s
	// Keys, when set, yields the keys in process (the embedded issuer) and
	// no HTTP is done. When nil, keys come from the jwks_uri in the
	// issuer's RFC 8414 metadata. Either way keys are cached and reloaded
	// on an unknown kid (at most once per MinRefreshInterval) and when
	// older than five minutes.
	Keys auth.KeySource
	// Revocations, when set, is asked about every token's client on every
	// request, cached or not (the embedded issuer: revoked clients).
	Revocations auth.RevocationSource
	HTTPClient  *http.Client // for discovery and JWKS; default: 10s timeout
	// MinRefreshInterval bounds JWKS reloads triggered by unknown kids;
	// default 30s.
	MinRefreshInterval time.Duration
}

// JWTVerifier verifies JWT access tokens signed by one issuer.
type JWTVerifier struct {
	cfg    JWTConfig
	keys   *keySet
	parser *jwt.Parser
	// cache spares a client's every request the signature check and claim
	// parsing of the token it sent the last time (see Verify).
	cache *tokenCache
}

// NewJWTVerifier returns a verifier for cfg. Without cfg.Keys it discovers
// the issuer's JWKS and loads it before returning, so a wrong issuer URL or
// an unreachable issuer is reported at startup rather than on the first
// request.
func NewJWTVerifier(ctx context.Context, cfg JWTConfig) (*JWTVerifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("new JWT verifier: issuer and audience are required")
	}
	if cfg.Leeway < 0 || cfg.MinRefreshInterval < 0 {
		return nil, errors.New("new JWT verifier: negative leeway or refresh interval")
	}
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = "sub"
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.MinRefreshInterval == 0 {
		cfg.MinRefreshInterval = 30 * time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	v := &JWTVerifier{
		cfg:   cfg,
		cache: newTokenCache(),
		keys:  &keySet{minInterval: cfg.MinRefreshInterval, maxAge: defaultKeyMaxAge},
		parser: jwt.NewParser(
			jwt.WithValidMethods(allowedAlgs),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(cfg.Leeway),
			// Canonical base64 only, so one token has one spelling.
			jwt.WithStrictDecoding(),
		),
	}
	if cfg.Keys != nil {
		v.keys.load = func(ctx context.Context) ([]auth.PublicKey, error) {
			keys, err := cfg.Keys.PublicKeys(ctx)
			if err != nil {
				return nil, fmt.Errorf("get issuer keys: %w", err)
			}
			return usableKeys(keys), nil
		}
	} else {
		jwksURI, err := discoverJWKS(ctx, cfg.HTTPClient, cfg.Issuer)
		if err != nil {
			return nil, fmt.Errorf("new JWT verifier: %w", err)
		}
		v.keys.load = func(ctx context.Context) ([]auth.PublicKey, error) {
			return fetchJWKS(ctx, cfg.HTTPClient, jwksURI)
		}
	}
	if err := v.keys.prime(ctx); err != nil {
		return nil, fmt.Errorf("new JWT verifier: %w", err)
	}
	return v, nil
}

// Verify checks token's signature, issuer, audience and times and returns
// the identity it carries.
func (v *JWTVerifier) Verify(ctx context.Context, token string) (identity.Identity, error) {
	if token == "" {
		return identity.Identity{}, invalid("empty token")
	}
	if len(token) > maxTokenLen {
		return identity.Identity{}, invalid("token too large")
	}
	// A token verified before is accepted again until it expires, as long
	// as the key that signed it is still the issuer's: a withdrawn key
	// stops its tokens here as it would in a full verification.
	digest := sha256.Sum256([]byte(token))
	if id, kid, ok := v.cache.get(digest); ok {
		if _, err := v.keys.get(ctx, kid); err == nil {
			return v.unlessRevoked(ctx, id)
		}
		v.cache.drop(digest)
	}
	claims := jwt.MapClaims{}
	var kid string
	parsed, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ = t.Header["kid"].(string)
		return v.keyFor(ctx, t)
	})
	if err != nil {
		return identity.Identity{}, classify(err, parsed, claims)
	}
	id, err := identityFromClaims(claims, v.cfg.TenantClaim)
	if err != nil {
		return id, err
	}
	if !id.ExpiresAt.IsZero() {
		// Until exp, not exp+leeway: past it the token gets the full
		// check, which still grants the leeway.
		v.cache.put(digest, id, kid, id.ExpiresAt)
	}
	return v.unlessRevoked(ctx, id)
}

// unlessRevoked returns id unless its token was issued to a client before
// the client was revoked. A token without iat counts as issued before any
// revocation.
func (v *JWTVerifier) unlessRevoked(ctx context.Context, id identity.Identity) (identity.Identity, error) {
	if v.cfg.Revocations == nil || id.ClientID == "" {
		return id, nil
	}
	revoked, err := v.cfg.Revocations.ClientRevoked(ctx, id.ClientID, id.IssuedAt)
	if err != nil {
		return identity.Identity{}, fmt.Errorf("check client revocation: %w", err)
	}
	if revoked {
		return identity.Identity{}, invalid("the client this token was issued to was revoked; sign in again")
	}
	return id, nil
}

// keyFor picks the key for a token whose alg the parser already allowed.
func (v *JWTVerifier) keyFor(ctx context.Context, t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		// RFC 7515 §4.1.11: extensions we do not implement must be refused.
		return nil, invalid("token has critical header parameters")
	}
	kid, ok := t.Header["kid"].(string)
	if !ok && t.Header["kid"] != nil {
		return nil, invalid("token kid is not a string")
	}
	key, err := v.keys.get(ctx, kid)
	if errors.Is(err, auth.ErrInvalidToken) {
		return nil, err
	}
	if err != nil {
		return nil, &unavailableError{err: err}
	}
	if key.Algorithm != t.Method.Alg() {
		return nil, invalid("token alg does not match its key")
	}
	return key.Key, nil
}

// unavailableError carries, through the JWT library, a failure to get keys
// that is no fault of the token.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }

// classify turns a parse failure into an error with a fixed, client-safe
// reason. The library's messages are not passed on: some carry JSON
// decoding errors that quote bytes of the token.
func classify(err error, t *jwt.Token, claims jwt.MapClaims) error {
	if ie, ok := errors.AsType[*invalidError](err); ok {
		return ie
	}
	if ue, ok := errors.AsType[*unavailableError](err); ok {
		return fmt.Errorf("verify token: %w", ue.err)
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return invalid("malformed token")
	case t != nil && (t.Method == nil || !slices.Contains(allowedAlgs, t.Method.Alg())):
		return invalid("token signing algorithm is not accepted; use RS256, ES256 or EdDSA")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalid("bad token signature")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		for _, c := range []string{"exp", "iss", "aud"} {
			if _, ok := claims[c]; !ok {
				return invalid("token has no " + c + " claim")
			}
		}
		return invalid("token lacks a required claim")
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalid("token expired")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return invalid("token is from another issuer")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return invalid("token is not for this resource (aud)")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return invalid("token is not valid yet (nbf)")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return invalid("token is issued in the future (iat)")
	default:
		return invalid("token rejected")
	}
}
