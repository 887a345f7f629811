package tools

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// callLimits gives each tenant a token bucket of tool calls: perMinute
// calls a minute, with bursts up to perMinute. Buckets of tenants idle
// for a while are dropped so the map stays as small as the active set.
type callLimits struct {
	perMinute int
	mu        sync.Mutex
	buckets   map[string]*bucket
}

type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
}

func newCallLimits(perMinute int) *callLimits {
	return &callLimits{perMinute: perMinute, buckets: map[string]*bucket{}}
}

// allow takes one call from tenant's bucket; when it is empty it returns
// false and how long until the next call would be allowed.
func (l *callLimits) allow(tenant string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[tenant]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(l.perMinute)/60), l.perMinute)}
		l.buckets[tenant] = b
	}
	b.lastSeen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// prune drops buckets idle long enough to have refilled completely.
func (l *callLimits) prune(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for t, b := range l.buckets {
		if now.Sub(b.lastSeen) > 2*time.Minute {
			delete(l.buckets, t)
		}
	}
}
