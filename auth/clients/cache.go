package clients

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// Bounds on how long a document is cached. The floor keeps a client that
// says no-store from making us fetch on every authorization request (a
// cheap way to aim our traffic at its server); the ceiling makes an edited
// or withdrawn document take effect within a day.
const (
	minCacheTTL = time.Minute
	maxCacheTTL = 24 * time.Hour
	// maxCacheEntries bounds memory: anyone can mint client_id URLs.
	maxCacheEntries = 10_000
)

type cacheEntry struct {
	rec     auth.ClientRecord
	expires time.Time
}

// cache holds fetched client records by URL. Only successes are cached,
// so a fixed document is picked up on the next attempt.
type cache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

func newCache() *cache {
	return &cache{entries: make(map[string]cacheEntry)}
}

func (c *cache) get(url string, now time.Time) (auth.ClientRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[url]
	if !ok || !now.Before(e.expires) {
		return auth.ClientRecord{}, false
	}
	return cloneRecord(e.rec), true
}

func (c *cache) put(url string, rec auth.ClientRecord, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCacheEntries {
		c.evict(now)
	}
	c.entries[url] = cacheEntry{rec: rec, expires: now.Add(ttl)}
}

// evict drops expired entries, then arbitrary ones (map order) until
// there is room; a dropped record is merely fetched again.
func (c *cache) evict(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	for k := range c.entries {
		if len(c.entries) < maxCacheEntries {
			return
		}
		delete(c.entries, k)
	}
}

// cacheTTL reads max-age (and no-store / no-cache, as 0) from the
// response's Cache-Control and clamps it to [minCacheTTL, maxCacheTTL];
// without either it is def.
func cacheTTL(h http.Header, def time.Duration) time.Duration {
	ttl, found := def, false
	for _, d := range strings.Split(h.Get("Cache-Control"), ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(name) {
		case "no-store", "no-cache":
			return minCacheTTL
		case "max-age":
			if secs, ok := parseDeltaSeconds(value); ok && !found {
				ttl, found = secs, true
			}
		}
	}
	if found {
		return min(max(ttl, minCacheTTL), maxCacheTTL)
	}
	return ttl
}

// parseDeltaSeconds reads a max-age value (RFC 9111 §1.2.2: digits; an
// overflowing one means "very long", which the ceiling then cuts).
func parseDeltaSeconds(v string) (time.Duration, bool) {
	v = strings.Trim(v, `"`)
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > int64(maxCacheTTL/time.Second) {
		return maxCacheTTL, true
	}
	return time.Duration(n) * time.Second, true
}
