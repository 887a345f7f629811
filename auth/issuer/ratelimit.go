package issuer

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Login failure budgets. A user name may fail loginUserBurst times, then
// once per loginUserEvery; one address may fail more often, since several
// people can share it, but not enough to try many names quickly.
const (
	loginUserBurst = 5
	loginUserEvery = 30 * time.Second
	loginIPBurst   = 20
	loginIPEvery   = 5 * time.Second
	maxLimiters    = 10000
)

// User code failure budgets (the device page). A user code has about 34
// bits (8 of 20 letters), so guessing one must stay rare: one address may
// mistype a few times, then once per deviceIPEvery; all addresses
// together, a botnet included, fail at most once per deviceAllEvery. With
// at most maxDeviceAuthz codes live, that bounds a guess's odds to about
// 2e-5 per code lifetime. The cost of the global budget: a distributed
// attacker can make legitimate users wait; it cannot sign anyone in.
const (
	deviceIPBurst  = 10
	deviceIPEvery  = 30 * time.Second
	deviceAllBurst = 100
	deviceAllEvery = 2 * time.Second
)

// failureLimiter rate-limits failures along several dimensions (user
// name, client address, everyone). Only failures cost: an attempt needs a
// token in every budget, counting attempts still in flight, and takes it
// only if it fails. So a user who signs in often is never slowed down,
// and a burst of parallel guesses cannot overdraw a budget.
//
// The address is the TCP peer. Behind a reverse proxy every user shares
// the proxy's address; then the per-name budget is what protects accounts.
type failureLimiter struct {
	mu   sync.Mutex
	dims []*dimension
}

// dimension is one kind of budget, with a budget per key.
type dimension struct {
	every   time.Duration
	burst   int
	budgets map[string]*budget
}

// budget is one rate.Limiter of failures plus the attempts in flight.
type budget struct {
	lim      *rate.Limiter
	inflight int
}

// limit is a budget of burst failures, refilled one per every.
type limit struct {
	every time.Duration
	burst int
}

// newFailureLimiter returns a limiter with one dimension per limit;
// begin takes one key per dimension, in the same order.
func newFailureLimiter(limits ...limit) *failureLimiter {
	l := &failureLimiter{}
	for _, lim := range limits {
		l.dims = append(l.dims, &dimension{every: lim.every, burst: lim.burst, budgets: map[string]*budget{}})
	}
	return l
}

func newLoginLimiter() *failureLimiter {
	return newFailureLimiter(limit{loginUserEvery, loginUserBurst}, limit{loginIPEvery, loginIPBurst})
}

func newUserCodeLimiter() *failureLimiter {
	return newFailureLimiter(limit{deviceIPEvery, deviceIPBurst}, limit{deviceAllEvery, deviceAllBurst})
}

// beginLogin starts a login attempt for username from r's address.
func (l *failureLimiter) beginLogin(username string, r *http.Request) (*attempt, bool) {
	return l.begin(strings.ToLower(username), clientIP(r))
}

// beginUserCode starts a user code attempt from r's address.
func (l *failureLimiter) beginUserCode(r *http.Request) (*attempt, bool) {
	return l.begin(clientIP(r), "")
}

// attempt is one try holding a place in each budget.
type attempt struct {
	l       *failureLimiter
	budgets []*budget
}

// begin starts an attempt, or reports false when a budget is exhausted;
// the caller must then not check the secret at all.
func (l *failureLimiter) begin(keys ...string) (*attempt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	budgets := make([]*budget, len(l.dims))
	for i, d := range l.dims {
		budgets[i] = d.get(keys[i])
	}
	for _, b := range budgets {
		if b.lim.Tokens()-float64(b.inflight) < 1 {
			return nil, false
		}
	}
	for _, b := range budgets {
		b.inflight++
	}
	return &attempt{l: l, budgets: budgets}, true
}

// done ends the attempt; a failure takes a token from each budget.
func (a *attempt) done(failed bool) {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	for _, b := range a.budgets {
		b.inflight--
		if failed {
			b.lim.Allow()
		}
	}
}

func (d *dimension) get(key string) *budget {
	if b, ok := d.budgets[key]; ok {
		return b
	}
	if len(d.budgets) >= maxLimiters {
		// Forget budgets that are full again; they hold no information.
		for k, b := range d.budgets {
			if b.inflight == 0 && b.lim.Tokens() >= float64(b.lim.Burst()) {
				delete(d.budgets, k)
			}
		}
	}
	b := &budget{lim: rate.NewLimiter(rate.Every(d.every), d.burst)}
	d.budgets[key] = b
	return b
}

// clientIP returns the host part of the TCP peer address.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
