package clients_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth/clients"
)

// clock is a settable time source for cache tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func TestFetchCaches(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cacheControl string
		fresh, stale time.Duration
	}{
		{"", 4 * time.Minute, 6 * time.Minute}, // the 5 min default
		{"public, max-age=3600", 59 * time.Minute, 61 * time.Minute},
		{"max-age=5", 59 * time.Second, 61 * time.Second},  // raised to 1 min
		{"no-store", 59 * time.Second, 61 * time.Second},   // raised to 1 min
		{"max-age=604800", 23 * time.Hour, 25 * time.Hour}, // cut to 24 h
		{"max-age=99999999999999999999", 23 * time.Hour, 25 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.cacheControl, func(t *testing.T) {
			t.Parallel()
			d := startDocServer(t, func(w http.ResponseWriter, r *http.Request, id string) {
				if tc.cacheControl != "" {
					w.Header().Set("Cache-Control", tc.cacheControl)
				}
				serveJSON(goodDoc)(w, r, id)
			})
			clk := &clock{now: fixedNow}
			f := devFetcher(clients.FetcherOptions{Now: clk.Now})
			first, err := f.Fetch(t.Context(), d.url)
			if err != nil {
				t.Fatal(err)
			}
			first.RedirectURIs[0] = "https://mutated.example/cb" // must not reach the cache
			clk.advance(tc.fresh)
			second, err := f.Fetch(t.Context(), d.url)
			if err != nil || d.hits.Load() != 1 || second.RedirectURIs[0] != "http://127.0.0.1:33418/callback" {
				t.Fatalf("after %s: hits %d, err %v, redirects %v; want one fetch, cached copy", tc.fresh, d.hits.Load(), err, second.RedirectURIs)
			}
			clk.advance(tc.stale - tc.fresh)
			if _, err := f.Fetch(t.Context(), d.url); err != nil || d.hits.Load() != 2 {
				t.Fatalf("after %s: hits %d, err %v; want a second fetch", tc.stale, d.hits.Load(), err)
			}
		})
	}
}

func TestFetchDoesNotCacheFailures(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	broken.Store(true)
	d := startDocServer(t, func(w http.ResponseWriter, r *http.Request, id string) {
		if broken.Load() {
			http.Error(w, "oops", http.StatusInternalServerError)
			return
		}
		serveJSON(goodDoc)(w, r, id)
	})
	f := devFetcher(clients.FetcherOptions{})
	if _, err := f.Fetch(t.Context(), d.url); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("error %v, want the 500", err)
	}
	broken.Store(false)
	if _, err := f.Fetch(t.Context(), d.url); err != nil {
		t.Fatalf("fixed document still refused: %v", err)
	}
}

func TestCacheTTL(t *testing.T) {
	t.Parallel()
	for cc, want := range map[string]time.Duration{
		"":                          5 * time.Minute,
		"max-age=600":               10 * time.Minute,
		`max-age="600"`:             10 * time.Minute,
		"MAX-AGE=600, public":       10 * time.Minute,
		"max-age=0":                 time.Minute,
		"max-age=-5":                5 * time.Minute,
		"max-age=abc":               5 * time.Minute,
		"no-cache":                  time.Minute,
		"max-age=3600, no-store":    time.Minute,
		"max-age=100000":            24 * time.Hour,
		"max-age=600, max-age=9000": 10 * time.Minute,
	} {
		h := http.Header{}
		h.Set("Cache-Control", cc)
		if got := clients.CacheTTL(h, 5*time.Minute); got != want {
			t.Errorf("Cache-Control %q: TTL %s, want %s", cc, got, want)
		}
	}
}
