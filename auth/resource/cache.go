package resource

import (
	"slices"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// maxCached bounds the cache; tokens are cheap to mint, memory is not.
const maxCached = 10000

type cached struct {
	id    identity.Identity
	kid   string // the JWT's signing key, re-checked on each hit
	until time.Time
}

// tokenCache remembers tokens verified recently, keyed by their SHA-256
// so that it never holds a token. It holds positive answers only: a
// token that failed costs a full verification each time, but is never
// wrongly accepted.
type tokenCache struct {
	mu      sync.Mutex
	entries map[[32]byte]cached
}

func newTokenCache() *tokenCache { return &tokenCache{entries: map[[32]byte]cached{}} }

// get returns the identity cached for k and the key id it was verified
// with, if the entry has not run out.
func (c *tokenCache) get(k [32]byte) (identity.Identity, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !time.Now().Before(e.until) {
		delete(c.entries, k)
		return identity.Identity{}, "", false
	}
	// Copies, so that a caller editing its Identity cannot change another's.
	id := e.id
	id.Scopes, id.Audience = slices.Clone(id.Scopes), slices.Clone(id.Audience)
	return id, e.kid, true
}

func (c *tokenCache) drop(k [32]byte) {
	c.mu.Lock()
	delete(c.entries, k)
	c.mu.Unlock()
}

func (c *tokenCache) put(k [32]byte, id identity.Identity, kid string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCached {
		now := time.Now()
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
	}
	c.entries[k] = cached{id: id, kid: kid, until: until}
}
