package resource

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-jose/go-jose/v4"

	"github.com/sandgate/sandgate/auth"
)

// Signing algorithms accepted for access tokens. Everything else, notably
// "none" and the HMAC family (whose "key" would be a public key an attacker
// also has), is refused before any key is looked up.
const (
	algRS256 = "RS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

var allowedAlgs = []string{algRS256, algES256, algEdDSA}

// minRSABits refuses keys that are too weak to trust.
const minRSABits = 2048

// maxJWKSBytes bounds what a JWKS or metadata response may make us read.
const maxJWKSBytes = 1 << 20

// fetchJWKS downloads a JWK set and keeps the keys usable for verification.
func fetchJWKS(ctx context.Context, client *http.Client, url string) ([]auth.PublicKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, client, url, &set); err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	return parseJWKS(set.Keys), nil
}

// parseJWKS decodes each key on its own so that one key of a type we do not
// know (an encryption key, a new curve) does not hide the others.
func parseJWKS(raw []json.RawMessage) []auth.PublicKey {
	keys := make([]auth.PublicKey, 0, len(raw))
	for _, r := range raw {
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(r); err != nil {
			continue
		}
		if jwk.Use != "" && jwk.Use != "sig" {
			continue
		}
		if !jwk.IsPublic() {
			// A JWKS should never hold private keys; if a broken issuer
			// publishes one, verify with its public half only.
			jwk = jwk.Public()
		}
		pk, ok := usableKey(auth.PublicKey{ID: jwk.KeyID, Algorithm: jwk.Algorithm, Key: jwk.Key})
		if ok {
			keys = append(keys, pk)
		}
	}
	return keys
}

// usableKeys filters keys from a KeySource the same way as JWKS keys.
func usableKeys(in []auth.PublicKey) []auth.PublicKey {
	out := make([]auth.PublicKey, 0, len(in))
	for _, k := range in {
		if pk, ok := usableKey(k); ok {
			out = append(out, pk)
		}
	}
	return out
}

// usableKey reports whether k can verify one of the accepted algorithms and
// returns it with Algorithm filled in. A declared algorithm must match the
// key type; an undeclared one is inferred from it. Binding each key to one
// algorithm is what stops a token from choosing how its key is used.
func usableKey(k auth.PublicKey) (auth.PublicKey, bool) {
	var alg string
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		if key.N == nil || key.N.BitLen() < minRSABits {
			return k, false
		}
		alg = algRS256
	case *ecdsa.PublicKey:
		if key.Curve != elliptic.P256() {
			return k, false
		}
		alg = algES256
	case ed25519.PublicKey:
		if len(key) != ed25519.PublicKeySize {
			return k, false
		}
		alg = algEdDSA
	default:
		return k, false
	}
	if k.Algorithm != "" && k.Algorithm != alg {
		return k, false
	}
	k.Algorithm = alg
	return k, true
}
