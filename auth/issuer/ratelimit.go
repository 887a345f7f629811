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

// loginLimiter rate-limits failed logins per user name and per client
// address. Only failures cost: an attempt needs a token in both budgets,
// counting attempts still in flight, and takes it only if it fails. So a
// user who signs in often is never slowed down, and a burst of parallel
// guesses cannot overdraw a budget.
//
// The address is the TCP peer. Behind a reverse proxy every user shares
// the proxy's address; then the per-name budget is what protects accounts.
type loginLimiter struct {
	mu    sync.Mutex
	users map[string]*budget
	ips   map[string]*budget
}

// budget is one rate.Limiter of failures plus the attempts in flight.
type budget struct {
	lim      *rate.Limiter
	inflight int
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{users: map[string]*budget{}, ips: map[string]*budget{}}
}

// attempt is one login try holding a place in each budget.
type attempt struct {
	l       *loginLimiter
	budgets []*budget
}

// begin starts an attempt, or reports false when a budget is exhausted;
// the caller must then not check the password at all.
func (l *loginLimiter) begin(username string, r *http.Request) (*attempt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	budgets := []*budget{
		l.get(l.users, strings.ToLower(username), rate.Every(loginUserEvery), loginUserBurst),
		l.get(l.ips, clientIP(r), rate.Every(loginIPEvery), loginIPBurst),
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

func (l *loginLimiter) get(m map[string]*budget, key string, every rate.Limit, burst int) *budget {
	if b, ok := m[key]; ok {
		return b
	}
	if len(m) >= maxLimiters {
		// Forget budgets that are full again; they hold no information.
		for k, b := range m {
			if b.inflight == 0 && b.lim.Tokens() >= float64(b.lim.Burst()) {
				delete(m, k)
			}
		}
	}
	b := &budget{lim: rate.NewLimiter(every, burst)}
	m[key] = b
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
