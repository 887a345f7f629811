package egress

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// Gate is one sandbox's egress state: its allowlist, which may change
// while it runs, and the counters its limits apply to. It outlives
// runner connections and replaced containers: a sandbox keeps its policy
// and budget whatever happens to its runner.
type Gate struct {
	SandboxID string
	Tenant    string
	// Principal identifies the owner in audit records; egress copies it
	// into every Record untouched.
	Principal identity.Identity

	limits Limits
	budget *budget
	rate   *budget // new connections, one token each
	// unrecorded counts connections refused over the rate without a
	// record of their own; the next record of the gate reports them.
	unrecorded atomic.Int64

	// updating serialises Update, so what is saved and what applies
	// are the same list; mu is not held while saving.
	updating sync.Mutex

	mu     sync.Mutex
	allow  policy.Rules
	active int
}

// NewGate returns the gate of a sandbox allowed to reach allow.
func NewGate(sandboxID, tenant string, principal identity.Identity, allow policy.Rules, limits Limits) *Gate {
	limits = limits.WithDefaults()
	return &Gate{SandboxID: sandboxID, Tenant: tenant, Principal: principal, limits: limits,
		budget: newBudget(limits.BytesPerMinute), rate: newBudget(int64(limits.ConnsPerMinute)), allow: allow}
}

// Allow returns the sandbox's current allowlist; a nil Gate allows
// nothing.
func (g *Gate) Allow() policy.Rules {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.allow
}

// SetAllow replaces the allowlist. Connections already open keep going;
// every new one is judged by the new list.
func (g *Gate) SetAllow(allow policy.Rules) {
	g.mu.Lock()
	g.allow = allow
	g.mu.Unlock()
}

// Update saves allow with save and, if that succeeds, applies it. Updates
// run one at a time, so the saved list is always the applied one.
func (g *Gate) Update(allow policy.Rules, save func(policy.Rules) error) error {
	g.updating.Lock()
	defer g.updating.Unlock()
	if err := save(allow); err != nil {
		return err
	}
	g.SetAllow(allow)
	return nil
}

// Limits returns the limits the gate applies.
func (g *Gate) Limits() Limits { return g.limits }

// Active reports how many connections are open.
func (g *Gate) Active() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active
}

// enter counts a new connection, or refuses it at the limit.
func (g *Gate) enter() (leave func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active >= g.limits.MaxConns {
		return nil, fmt.Errorf("too many connections: this sandbox has %d open (limit %d); close some first", g.active, g.limits.MaxConns)
	}
	g.active++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.active--
			g.mu.Unlock()
		})
	}, nil
}

// describe lists rules for a refusal message, briefly.
func describe(rules policy.Rules) string {
	if len(rules) == 0 {
		return "nothing"
	}
	s := rules.Strings()
	if len(s) > 8 {
		s = append(s[:8], fmt.Sprintf("and %d more", len(s)-8))
	}
	return strings.Join(s, ", ")
}
