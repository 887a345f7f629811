package issuer

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
)

// signingKey adapts the current stored key to op.SigningKey.
type signingKey struct {
	kid  string
	priv *ecdsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return signingAlg }
func (k signingKey) Key() any                                    { return k.priv }
func (k signingKey) ID() string                                  { return k.kid }

// publicKey adapts a published key to op.Key, which zitadel serialises
// into the JWKS and uses to verify its own tokens (e.g. at /revoke).
type publicKey struct {
	kid string
	pub *ecdsa.PublicKey
}

func (k publicKey) ID() string                         { return k.kid }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return signingAlg }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.pub }

// SigningKey returns the current key. keys.json is re-read when it
// changed, so a RotateKeys from another process takes effect at once.
func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	d, err := s.keys.Load()
	if err != nil {
		return nil, err
	}
	k, ok := d.current()
	if !ok {
		return nil, errors.New("keys.json has no current signing key: run RotateKeys")
	}
	priv, err := k.private()
	if err != nil {
		return nil, err
	}
	return signingKey{kid: k.JWK.KeyID, priv: priv}, nil
}

// SignatureAlgorithms implements op.AuthStorage.
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{signingAlg}, nil
}

// KeySet returns the published verification keys (the JWKS).
func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	keys, err := s.publishedKeys()
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out, nil
}

// authPublicKeys returns the published keys in the shape auth.KeySource
// promises.
func (s *storage) authPublicKeys() ([]auth.PublicKey, error) {
	keys, err := s.publishedKeys()
	if err != nil {
		return nil, err
	}
	out := make([]auth.PublicKey, len(keys))
	for i, k := range keys {
		out[i] = auth.PublicKey{ID: k.kid, Algorithm: string(signingAlg), Key: k.pub}
	}
	return out, nil
}

func (s *storage) publishedKeys() ([]publicKey, error) {
	d, err := s.keys.Load()
	if err != nil {
		return nil, err
	}
	stored := d.published(time.Now())
	out := make([]publicKey, 0, len(stored))
	for _, k := range stored {
		priv, err := k.private()
		if err != nil {
			return nil, fmt.Errorf("load published keys: %w", err)
		}
		out = append(out, publicKey{kid: k.JWK.KeyID, pub: &priv.PublicKey})
	}
	return out, nil
}
