package fleet

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// Hooks for the gateway's tests, which simulate a crash, a race between
// replicas or the passage of time through them (gateway/export_test.go).
// Nothing in the gateway's own code calls them.

// Tracked returns the box of sandbox id, or nil when the fleet does not
// track it.
func (m *Fleet) Tracked(id string) *Box {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[id]
}

// DropClients closes every runner connection (and with them the egress
// sessions) without touching the sandboxes.
func (m *Fleet) DropClients() {
	for _, b := range m.Matching(func(*Box) bool { return true }) {
		b.Mu.Lock()
		b.DropClient()
		b.Mu.Unlock()
	}
}

// TendPoolOnce runs one round of a replicated gateway's care of its ready
// sandboxes (pool.tend) as if it were now.
func (m *Fleet) TendPoolOnce(ctx context.Context, now time.Time) { m.pool.TendOnce(ctx, now) }

// SetTouchEvery sets how often a replicated gateway records a box's use
// (IdleTTL/8 by default).
func (m *Fleet) SetTouchEvery(d time.Duration) { m.touchEvery = d }

// AdmitUnder runs a replicated gateway's quota check after the creation
// of sandbox id, under limit, as if another replica's creation had raced
// it.
func (m *Fleet) AdmitUnder(ctx context.Context, id string, p identity.Identity, limit int) error {
	m.cfg.MaxSandboxesPerTenant = limit
	return m.Admit(ctx, m.Tracked(id), p)
}

// RaceDefault makes a default sandbox for p's client name on this
// replicated gateway, as if its creation had raced another replica's,
// and returns the default it then keeps.
func (m *Fleet) RaceDefault(ctx context.Context, p identity.Identity, name string) (string, error) {
	key := ClientKey(p, name)
	b, err := m.CreateBox(ctx, p, Spec{Client: key, Image: m.cfg.Image, Allow: m.DefaultAllow(p.Tenant)})
	if err != nil {
		return "", err
	}
	if b, _, err = m.KeepOldest(ctx, p, key, b); err != nil {
		return "", err
	}
	return b.ID(), nil
}
