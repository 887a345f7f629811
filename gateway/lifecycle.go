package gateway

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// sweep removes boxes that were idle too long or outlived their maximum
// lifetime, and ends their sessions so the session ids stop working too.
func (m *sandboxes) sweep(ctx context.Context, now time.Time, endSession func(id, reason string)) {
	idle := m.cfg.Limits.IdleTTL
	for _, b := range m.matching(func(b *box) bool { return b.idleSince(now) > idle || now.After(b.expires) }) {
		reason := "idle"
		if now.After(b.expires) {
			reason = "max lifetime"
		}
		if b.session != "" {
			endSession(b.session, reason)
			continue
		}
		_ = m.destroy(ctx, b, ownerOnly(b), reason)
	}
}

// reconcile runs at start. Session-bound containers died with the process
// that held their sessions, and expired ones are due anyway: both are
// removed. Unexpired sessionless sandboxes are adopted, because their
// sandbox_id is the only handle their owner has and it is still valid.
func (m *sandboxes) reconcile(ctx context.Context) error {
	infos, err := m.provider.List(ctx, sandbox.Filter{})
	if err != nil {
		return err
	}
	now := time.Now()
	for _, info := range infos {
		if info.Session != "" || now.After(info.ExpiresAt) || info.State != "running" {
			if err := m.provider.Remove(ctx, info.ID); err != nil && !isNotFound(err) {
				m.log.Warn("remove orphaned sandbox", "sandbox_id", info.ID, "error", err)
				continue
			}
			m.log.Info("removed orphaned sandbox", "sandbox_id", info.ID, "session_id", info.Session, "state", info.State)
			continue
		}
		sb, err := m.provider.Get(ctx, info.ID)
		if err != nil {
			continue
		}
		b := &box{sb: sb, owner: info.Owner, expires: info.ExpiresAt}
		b.touch()
		m.mu.Lock()
		m.byID[b.id()] = b
		m.mu.Unlock()
		m.log.Info("adopted sandbox", "sandbox_id", info.ID)
	}
	return nil
}

// closeAll destroys every box; used at shutdown.
func (m *sandboxes) closeAll(ctx context.Context) {
	for _, b := range m.matching(func(*box) bool { return true }) {
		_ = m.destroy(ctx, b, ownerOnly(b), "shutdown")
	}
}
