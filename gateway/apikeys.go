package gateway

import (
	"github.com/sandgate/sandgate/auth/apikey"
	"github.com/sandgate/sandgate/auth/identity"
)

// UseAPIKeys makes keys the E2B API's keys: an X-API-KEY is looked up in
// the store at each request, and the sandboxes a revoked key created
// stop answering their access tokens at once (OwnerRevoked), not only
// the key itself. Adopted sandboxes know only their owner's digest, so a
// revoked key is matched by its principal's digest.
func (c *E2BConfig) UseAPIKeys(keys *apikey.Store) {
	c.APIKey = func(key string) (identity.Identity, error) {
		rec, err := keys.Lookup(key)
		if err != nil {
			return identity.Identity{}, err
		}
		return rec.Identity(), nil
	}
	c.OwnerRevoked = func(owner string) (bool, error) {
		revoked, err := keys.Revoked()
		if err != nil {
			return true, err
		}
		for _, r := range revoked {
			if r.Identity().Digest() == owner {
				return true, nil
			}
		}
		return false, nil
	}
}
