package issuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

const keysFile = "keys.json"

// keyRetentionMargin is added to the token lifetime before a retired key
// leaves the JWKS. It covers clock skew between the gateway and clients,
// and the moment between a rotation and the server reloading keys.json.
const keyRetentionMargin = time.Minute

// signingAlg is the one algorithm we sign with. ES256 keys are small and
// fast to make, and every JOSE library verifies them.
const signingAlg = jose.ES256

// keysDoc is keys.json.
type keysDoc struct {
	// TokenTTLSeconds is the longest lifetime of a token signed with these
	// keys, as recorded by the servers that use the directory. RotateKeys
	// runs without a Config and uses it to know when a retired key can no
	// longer have live tokens.
	TokenTTLSeconds int64       `json:"token_ttl_seconds"`
	Keys            []storedKey `json:"keys"`
}

// storedKey is one signing key. Exactly one key has no RetiredAt: the
// current one.
type storedKey struct {
	JWK       jose.JSONWebKey `json:"jwk"` // private; kid is its RFC 7638 thumbprint
	CreatedAt time.Time       `json:"created_at"`
	RetiredAt time.Time       `json:"retired_at,omitzero"`
}

// RotateKeys makes a new signing key current in dir. The previous keys
// stay published until every token they signed has expired, and are
// removed from keys.json after that. A running server signs with the new
// key from its next token on.
func RotateKeys(dir string) (newKID string, err error) {
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	f := newJSONFile[keysDoc](dir, keysFile)
	err = f.Update(func(d *keysDoc) error {
		now := time.Now().UTC()
		for i := range d.Keys {
			if d.Keys[i].RetiredAt.IsZero() {
				d.Keys[i].RetiredAt = now
			}
		}
		k, err := newSigningKey(now)
		if err != nil {
			return err
		}
		d.Keys = append(d.Keys, k)
		d.prune(now)
		newKID = k.JWK.KeyID
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("rotate signing keys in %s: %w", dir, err)
	}
	return newKID, nil
}

// ensureKeys records ttl as a token lifetime in use and creates the first
// signing key of a new directory.
func ensureKeys(f *jsonFile[keysDoc], ttl time.Duration) error {
	return f.Update(func(d *keysDoc) error {
		// Keep the longest lifetime any server recorded: dropping a key
		// too early breaks tokens, keeping it longer costs nothing.
		d.TokenTTLSeconds = max(d.TokenTTLSeconds, int64(ttl.Seconds()))
		if _, ok := d.current(); ok {
			return nil
		}
		k, err := newSigningKey(time.Now().UTC())
		if err != nil {
			return err
		}
		d.Keys = append(d.Keys, k)
		return nil
	})
}

// current returns the key new tokens are signed with.
func (d *keysDoc) current() (storedKey, bool) {
	for i := len(d.Keys) - 1; i >= 0; i-- {
		if d.Keys[i].RetiredAt.IsZero() {
			return d.Keys[i], true
		}
	}
	return storedKey{}, false
}

// retention is how long a retired key stays published.
func (d *keysDoc) retention() time.Duration {
	ttl := time.Duration(d.TokenTTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = defaultAccessTokenTTL
	}
	return ttl + keyRetentionMargin
}

// published returns the keys a verifier needs now: the current one and
// every retired key that may still have signed an unexpired token.
func (d *keysDoc) published(now time.Time) []storedKey {
	keep := make([]storedKey, 0, len(d.Keys))
	for _, k := range d.Keys {
		if k.RetiredAt.IsZero() || now.Before(k.RetiredAt.Add(d.retention())) {
			keep = append(keep, k)
		}
	}
	return keep
}

// prune drops retired keys no token can depend on any more.
func (d *keysDoc) prune(now time.Time) {
	d.Keys = d.published(now)
}

func newSigningKey(now time.Time) (storedKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return storedKey{}, fmt.Errorf("generate signing key: %w", err)
	}
	jwk := jose.JSONWebKey{Key: priv, Algorithm: string(signingAlg), Use: "sig"}
	pub := jwk.Public()
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return storedKey{}, fmt.Errorf("key thumbprint: %w", err)
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(thumb)
	return storedKey{JWK: jwk, CreatedAt: now}, nil
}

// private returns the ECDSA private key of k.
func (k storedKey) private() (*ecdsa.PrivateKey, error) {
	priv, ok := k.JWK.Key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("signing key " + k.JWK.KeyID + " is not an ECDSA private key")
	}
	return priv, nil
}
