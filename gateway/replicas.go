package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Replicated gateways (Config.Replicated): several gateway processes
// share one provider's sandboxes and nothing else. What a replica keeps
// in memory is a cache of what it uses; what the others need is in the
// provider's records (sandbox.Recorder):
//
//   - A sandbox id a replica does not track is looked up in the provider,
//     checked against the caller as a tracked one is, and adopted
//     (lookup). Legacy MCP sessions are the exception: they live in the
//     memory of the replica that started them, so their requests must be
//     routed to it by Mcp-Session-Id (middleware.go says so to a request
//     that reaches another).
//   - A sessionless client's default sandbox is found by the client key
//     recorded on it (sandbox.Spec.Client), and of two made at once the
//     oldest is kept (defaultbox.go).
//   - Quotas count the tenant's sandboxes in the provider, plus this
//     replica's creations in flight; after a creation they are counted
//     again, and of a tenant over its limit the sandboxes beyond the
//     limit oldest (by CreatedAt, then id; every replica sees the same
//     order) are destroyed by their creators (admit). What is left: a
//     record with an earlier CreatedAt that becomes visible only after
//     another replica's recount (clocks of two replicas apart by more
//     than a creation takes, or a record write stalled that long) lets
//     both keep theirs, and the tenant holds one over its limit until it
//     destroys one.
//   - Uses are recorded (Recorder.Touch) at most every touchEvery per box
//     (IdleTTL/8), in the background, one write in flight per box, each
//     bounded by touchTimeout; the sweep records busy boxes too. Before
//     the sweep removes a box as idle it reads the record, and spares a
//     box another replica used within IdleTTL plus touchEvery (the most
//     a record lags a use).
//   - Reconciliation removes only what is due whoever holds it
//     (removeDue): expired, idle by its record past IdleTTL plus
//     touchEvery, ownerless records past ReconcileGrace, and unclaimed
//     pooled ones abandoned by their replica (below).
//     A sandbox whose runner is gone (a Kubernetes pod deleted from
//     outside) stays, so its owner's next call replaces it. A tracked
//     box whose record is gone was removed by another replica: it is
//     forgotten.
//   - Allowlist changes are written to the record (Recorder.SetNetwork),
//     not to VAR/network. The runner keeps one egress session, the
//     newest, and a replica reads the allowlist from the record after the
//     runner switched to its session and before it serves it
//     (box_egress.go); a replica that narrowed a list takes the session
//     over before it answers (setAllow). So once sandbox_network has
//     returned, no replica decides a new connection with the old list.
//     Should the takeover fail (the answer says so), the others apply the
//     new list at their next reconciliation, within ReconcileInterval,
//     which brings every tracked box's allowlist up to date.
//   - The timeout an E2B client set is written to the record
//     (Recorder.SetDeadline), not to VAR/deadline. A replica that looks
//     the sandbox up arms it, reconciliation brings tracked boxes' up to
//     date and removes untracked sandboxes past it, and a replica reads
//     the record again before it removes a box for it (deadline.go).
//   - Shutdown leaves sessionless sandboxes to the other replicas.
//   - Each replica keeps a warm pool of its own, and the provider records
//     its claims (sandbox.PoolClaims), where every replica reads who owns
//     a claimed one. A replica records a use of each of its ready
//     sandboxes every touchEvery (pool.tend); an unclaimed one unused for
//     IdleTTL plus touchEvery was left by a replica that is gone, and any
//     replica removes it, only while it is still unclaimed
//     (RemoveUnclaimed).
//   - Each replica writes its own audit log under its own VAR.

const (
	// touchTimeout bounds one write of a use to the provider.
	touchTimeout = 10 * time.Second
	// recordTimeout bounds one read of a sandbox's record.
	recordTimeout = 10 * time.Second
)

// replicated reports whether other replicas share the provider.
func (m *sandboxes) replicated() bool { return m.rec != nil }

// record returns the provider's record of sandbox id, whatever its
// runner's state, or ErrNotFound.
func (m *sandboxes) record(ctx context.Context, id string) (sandbox.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	infos, err := m.provider.List(ctx, sandbox.Filter{ID: id})
	if err != nil {
		return sandbox.Info{}, fmt.Errorf("look up sandbox %s: %w", id, err)
	}
	for _, info := range infos {
		if info.ID == id {
			return info, nil
		}
	}
	return sandbox.Info{}, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
}

// lookup finds a sandbox this replica does not track in the provider
// and, if p may use it from session, adopts it. Concurrent lookups of one
// id track one box: the first to finish wins, the others use its box.
func (m *sandboxes) lookup(ctx context.Context, p identity.Identity, session, id string) (*box, error) {
	return m.lookupAs(ctx, p.Digest(), session, id)
}

// lookupAs is lookup for the principal whose Digest is caller.
func (m *sandboxes) lookupAs(ctx context.Context, caller, session, id string) (*box, error) {
	notFound := fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	info, err := m.record(ctx, id)
	if err != nil {
		return nil, err
	}
	if info.Owner == "" || ended(info, time.Now()) || !sessionAllows(info.Owner, info.Session, caller, session) {
		return nil, notFound
	}
	b, running := m.adoptee(ctx, info)
	m.mu.Lock()
	if have := m.byID[id]; have != nil {
		m.mu.Unlock()
		if !sessionAllows(have.owner, have.session, caller, session) {
			return nil, notFound
		}
		return have, nil
	}
	m.byID[id] = b
	m.mu.Unlock()
	m.adopted(b, info, running)
	return b, nil
}

// held returns the sandboxes the provider holds for tenant that count
// against its quota, oldest first (by CreatedAt, then id): from their
// records alone, read as since says (sandbox.Filter.Since): when it
// names the sandbox this replica just made or claimed, as of that write
// or later, which holds every record written before it (see admit).
func (m *sandboxes) held(ctx context.Context, tenant, since string) ([]sandbox.Info, error) {
	infos, err := m.provider.List(ctx, sandbox.Filter{Tenant: tenant, RecordsOnly: true, Since: since})
	if err != nil {
		return nil, fmt.Errorf("count your tenant's sandboxes: %w", err)
	}
	now := time.Now()
	infos = slices.DeleteFunc(infos, func(info sandbox.Info) bool {
		// Filter.Tenant "" matches every tenant.
		return info.Tenant != tenant || info.Owner == "" || now.After(info.ExpiresAt)
	})
	slices.SortFunc(infos, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return infos, nil
}

// admit counts the tenant's sandboxes again once b exists. When the
// tenant holds more than its limit and b is not among the limit oldest,
// b is destroyed and the caller gets the quota error: replicas that
// created at once all see the same order, so exactly the newest go.
// Should the count fail, b goes too: a quota that cannot be checked is
// not granted.
func (m *sandboxes) admit(ctx context.Context, b *box, p identity.Identity) error {
	limit := m.cfg.MaxSandboxesPerTenant
	infos, err := m.held(ctx, b.tenant, b.id())
	if err == nil {
		i := slices.IndexFunc(infos, func(info sandbox.Info) bool { return info.ID == b.id() })
		if i < limit {
			return nil
		}
		err = quotaError(len(infos)-1, limit)
		m.log.Info("sandbox over its tenant's quota after a concurrent creation; destroying it", "sandbox_id", b.id(), "tenant", b.tenant, "held", len(infos), "limit", limit)
	}
	_ = m.destroy(ctx, b, p, "quota")
	return err
}

// recordUse writes b's last use to the provider unless one as recent as
// touchEvery is there or a write is in flight. It does not wait.
func (m *sandboxes) recordUse(b *box) {
	at := b.lastUsed.Load()
	if time.Duration(at-b.recorded.Load()) < m.touchEvery || !b.recording.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer b.recording.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), touchTimeout)
		defer cancel()
		if err := m.rec.Touch(ctx, b.id(), time.Unix(0, at)); err != nil {
			if !isNotFound(err) {
				m.log.Warn("record a sandbox's use; the next use or sweep retries", "sandbox_id", b.id(), "error", err)
			}
			return
		}
		raise(&b.recorded, at)
	}()
}

// recordUses records the uses of every tracked box the last writes
// missed (throttled, or failed) and, for a busy box, the use going on,
// so that a long call does not look idle to the other replicas.
func (m *sandboxes) recordUses() {
	for _, b := range m.matching(func(*box) bool { return true }) {
		if b.inUse.Load() > 0 {
			b.touch() // records too
			continue
		}
		m.recordUse(b)
	}
}

// usedElsewhere reports whether b, idle here, must be spared because its
// record says another replica used it within IdleTTL plus touchEvery, or
// because its record cannot be read (removing on a guess is worse than
// removing a sweep later). A box whose record is gone was removed
// elsewhere: it is forgotten, and spared (there is nothing to destroy).
func (m *sandboxes) usedElsewhere(ctx context.Context, b *box, now time.Time) bool {
	info, err := m.record(ctx, b.id())
	switch {
	case isNotFound(err):
		m.forget(b)
		return true
	case err != nil:
		m.log.Warn("read an idle sandbox's last use; keeping it until the next sweep", "sandbox_id", b.id(), "error", err)
		return true
	}
	used := lastUse(info)
	if now.Sub(used) > m.cfg.Limits.IdleTTL+m.touchEvery {
		return false
	}
	raise(&b.lastUsed, used.UnixNano())
	raise(&b.recorded, used.UnixNano())
	return true
}

// lastUse is a record's last use; its creation counts as one.
func lastUse(info sandbox.Info) time.Time {
	if info.LastUsed.After(info.CreatedAt) {
		return info.LastUsed
	}
	return info.CreatedAt
}

// raise sets v to n if n is larger.
func raise(v interface {
	Load() int64
	CompareAndSwap(old, new int64) bool
}, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// due says why a listed sandbox must be removed whoever holds it, or "".
func (m *sandboxes) due(info sandbox.Info, now time.Time) string {
	young := now.Sub(info.CreatedAt) < m.cfg.ReconcileGrace
	switch {
	case info.Owner == "" && info.Pool != "":
		// Unclaimed in some replica's pool, which records a use of it
		// every touchEvery (pool.tend): one unused as long as an idle
		// sandbox may stay is left by a gateway that is gone.
		if now.Sub(lastUse(info)) > m.cfg.Limits.IdleTTL+m.touchEvery {
			return reasonAbandoned
		}
		return ""
	case info.Owner == "" && !young:
		return "ownerless" // damaged, or a creation cut short
	case info.Owner != "" && !info.ExpiresAt.IsZero() && now.After(info.ExpiresAt):
		return "expired"
	case info.Owner != "" && !info.Deadline.IsZero() && now.After(info.Deadline):
		return "timed out" // its owner's deadline (deadline.go)
	case info.Owner != "" && now.Sub(lastUse(info)) > m.cfg.Limits.IdleTTL+m.touchEvery:
		return "idle"
	}
	return ""
}

// reasonAbandoned is why an unclaimed pooled sandbox of a gateway that
// is gone is removed.
const reasonAbandoned = "abandoned pooled"

// removeDue removes the listed sandboxes no box of this replica tracks
// that are due (see due), whichever replica made them. An abandoned
// pooled sandbox is removed only while still unclaimed: the list may be
// older than a claim.
func (m *sandboxes) removeDue(ctx context.Context, infos []sandbox.Info, now time.Time) {
	for _, info := range infos {
		m.mu.Lock()
		mine := m.byID[info.ID] != nil || m.pending[info.ID]
		m.mu.Unlock()
		why := m.due(info, now)
		switch {
		case why == "" || mine || m.pool.holds(info.ID):
		case why == reasonAbandoned && m.claims != nil:
			m.removeUnclaimed(ctx, info)
		default:
			m.removeOrphan(ctx, info, why)
		}
	}
}

// removeUnclaimed removes an abandoned pooled sandbox unless it was
// claimed after it was listed.
func (m *sandboxes) removeUnclaimed(ctx context.Context, info sandbox.Info) {
	switch err := m.claims.RemoveUnclaimed(ctx, info.ID); {
	case err == nil:
		m.log.Info("removed "+reasonAbandoned+" sandbox", "sandbox_id", info.ID, "state", info.State)
	case errors.Is(err, sandbox.ErrClaimed), isNotFound(err):
		// Claimed since the list, or removed by another replica.
	default:
		m.log.Warn("remove "+reasonAbandoned+" sandbox", "sandbox_id", info.ID, "error", err)
	}
}

// reconcileShared is reconcileTracked of a replicated gateway. It
// finishes its own failed removals, forgets boxes whose record is gone
// (another replica removed them), brings tracked boxes' allowlists and
// deadlines up to date, and removes untracked sandboxes that are due. It
// never removes a sandbox for being untracked: another replica may use
// it.
func (m *sandboxes) reconcileShared(ctx context.Context, now time.Time) {
	before := m.matching(func(*box) bool { return true }) // tracked before the list: their records exist
	listedAt := time.Now()
	// The records alone: what is due, the allowlists and deadlines are
	// all there, and a cluster's pods are the larger half of a list.
	infos, err := m.provider.List(ctx, sandbox.Filter{RecordsOnly: true})
	if err != nil {
		m.log.Warn("reconcile sandboxes", "error", err)
		return
	}
	listed := map[string]bool{}
	for _, info := range infos {
		listed[info.ID] = true
		m.mu.Lock()
		b := m.byID[info.ID]
		m.mu.Unlock()
		switch {
		case b != nil && b.isGone():
			if err := m.remove(ctx, b); err != nil {
				m.log.Warn("retry sandbox removal", "sandbox_id", b.id(), "error", err)
			}
		case b != nil:
			m.syncNetwork(b, info.Network, listedAt)
			m.syncDeadline(b, info.Deadline, listedAt)
		}
	}
	m.removeDue(ctx, infos, now)
	for _, b := range before {
		if !listed[b.id()] {
			m.forget(b)
		}
	}
	m.mu.Lock()
	for id, b := range m.byID {
		if b.isGone() && !listed[id] {
			delete(m.byID, id)
		}
	}
	m.mu.Unlock()
}

// removedDuringCall reports whether a call on b that lost its runner
// (err says the connection broke or the runner stopped answering) lost
// it because another replica destroyed the sandbox meanwhile: its record
// is gone. The box is then forgotten, and the caller is told the sandbox
// is not found rather than that its next call replaces it. Whether the
// runner's connection closes first or its heartbeat runs out first
// depends on how the pod's deletion unfolds; the answer must not.
func (m *sandboxes) removedDuringCall(ctx context.Context, b *box, err error) bool {
	if !m.replicated() {
		return false
	}
	if code := protocol.CodeOf(err); code != protocol.CodeUnresponsive && code != protocol.CodeUnavailable {
		return false
	}
	if _, rerr := m.record(context.WithoutCancel(ctx), b.id()); !isNotFound(rerr) {
		return false
	}
	m.forget(b)
	return true
}

// forget stops tracking b, whose sandbox another replica (or an
// operator) removed: that replica wrote the audit record.
func (m *sandboxes) forget(b *box) {
	if !b.markGone() {
		return
	}
	m.mu.Lock()
	if m.byID[b.id()] == b {
		delete(m.byID, b.id())
	}
	if b.session != "" && m.bySession[b.session] == b {
		delete(m.bySession, b.session)
	}
	m.mu.Unlock()
	m.log.Info("sandbox removed elsewhere; no longer tracked", "sandbox_id", b.id(), "session_id", b.session)
}

// byAccess finds a sessionless sandbox by id alone, for a caller that
// proves access otherwise (a sandbox access token, accesstoken.go). A
// replicated gateway adopts one it does not track, as lookup does.
func (m *sandboxes) byAccess(ctx context.Context, id string) (*box, error) {
	notFound := fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	m.mu.Lock()
	b := m.byID[id]
	m.mu.Unlock()
	if b == nil && m.replicated() {
		info, err := m.record(ctx, id)
		if err != nil {
			return nil, err
		}
		// Looked up as its owner, whom the record names.
		b, err = m.lookupAs(ctx, info.Owner, "", id)
		if err != nil {
			return nil, err
		}
	}
	if b == nil || b.session != "" {
		return nil, notFound
	}
	return b, nil
}
