package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress/policy"
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
//     (sharedRecords.untracked): expired, idle by its record past IdleTTL plus
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

// Record returns the provider's record of sandbox id, whatever its
// runner's state, or ErrNotFound.
func (m *Fleet) Record(ctx context.Context, id string) (sandbox.Info, error) {
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
func (m *Fleet) lookup(ctx context.Context, p identity.Identity, session, id string) (*Box, error) {
	return m.lookupAs(ctx, p.Digest(), session, id)
}

// asOwner is the caller of a lookup made as the sandbox's owner, whom
// its record names (ByAccess).
const asOwner = ""

// lookupAs is lookup for the principal whose Digest is caller.
func (m *Fleet) lookupAs(ctx context.Context, caller, session, id string) (*Box, error) {
	notFound := fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	info, err := m.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	if caller == asOwner {
		caller = info.Owner
	}
	if info.Owner == "" || ended(info, time.Now()) || !sessionAllows(info.Owner, info.Session, caller, session) {
		return nil, notFound
	}
	b, running := m.adoptee(ctx, info)
	m.mu.Lock()
	if have := m.byID[id]; have != nil {
		m.mu.Unlock()
		if !sessionAllows(have.Owner, have.Session, caller, session) {
			return nil, notFound
		}
		return have, nil
	}
	m.byID[id] = b
	m.mu.Unlock()
	m.adopted(b, info, running)
	return b, nil
}

// Held returns the sandboxes the provider holds for tenant that count
// against its quota (paused ones, where its records say so, do not), oldest first (by CreatedAt, then id): from their
// records alone, read as since says (sandbox.Filter.Since): when it
// names the sandbox this replica just made or claimed, as of that write
// or later, which holds every record written before it (see admit).
func (m *Fleet) Held(ctx context.Context, tenant, since string) ([]sandbox.Info, error) {
	infos, err := m.provider.List(ctx, sandbox.Filter{Tenant: tenant, RecordsOnly: true, Since: since})
	if err != nil {
		return nil, fmt.Errorf("count your tenant's sandboxes: %w", err)
	}
	now := time.Now()
	infos = slices.DeleteFunc(infos, func(info sandbox.Info) bool {
		// Filter.Tenant "" matches every tenant.
		return info.Tenant != tenant || info.Owner == "" || now.After(info.ExpiresAt) || info.State == sandbox.StatePaused
	})
	slices.SortFunc(infos, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return infos, nil
}

// Admit counts the tenant's sandboxes again once b exists. When the
// tenant holds more than its limit and b is not among the limit oldest,
// b is destroyed and the caller gets the quota error: replicas that
// created at once all see the same order, so exactly the newest go.
// Should the count fail, b goes too: a quota that cannot be checked is
// not granted.
func (m *Fleet) Admit(ctx context.Context, b *Box, p identity.Identity) error {
	limit := m.cfg.MaxSandboxesPerTenant
	infos, err := m.Held(ctx, b.Tenant, b.ID())
	if err == nil {
		i := slices.IndexFunc(infos, func(info sandbox.Info) bool { return info.ID == b.ID() })
		if i < limit {
			return nil
		}
		err = quotaError(len(infos)-1, limit)
		m.log.Info("sandbox over its tenant's quota after a concurrent creation; destroying it", "sandbox_id", b.ID(), "tenant", b.Tenant, "held", len(infos), "limit", limit)
	}
	_ = m.Destroy(ctx, b, p, "quota")
	return err
}

// recordUse writes b's last use to the provider unless one as recent as
// touchEvery is there or a write is in flight. It does not wait.
func (m *Fleet) recordUse(b *Box) {
	at := b.lastUsed.Load()
	if time.Duration(at-b.recorded.Load()) < m.touchEvery || !b.recording.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer b.recording.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), touchTimeout)
		defer cancel()
		if err := m.records.touch(ctx, b.ID(), time.Unix(0, at)); err != nil {
			if !isNotFound(err) {
				m.log.Warn("record a sandbox's use; the next use or sweep retries", "sandbox_id", b.ID(), "error", err)
			}
			return
		}
		raise(&b.recorded, at)
	}()
}

// recordUses records the uses of every tracked box the last writes
// missed (throttled, or failed) and, for a busy box, the use going on,
// so that a long call does not look idle to the other replicas.
func (m *Fleet) recordUses() {
	for _, b := range m.Matching(func(*Box) bool { return true }) {
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
func (m *Fleet) usedElsewhere(ctx context.Context, b *Box, now time.Time) bool {
	info, err := m.Record(ctx, b.ID())
	switch {
	case isNotFound(err):
		m.forget(b)
		return true
	case err != nil:
		m.log.Warn("read an idle sandbox's last use; keeping it until the next sweep", "sandbox_id", b.ID(), "error", err)
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
func (m *Fleet) due(info sandbox.Info, now time.Time) string {
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
	case info.State == sandbox.StatePaused:
		// Paused: only its retention ends it (pause.go).
		if !info.PausedAt.IsZero() && now.Sub(info.PausedAt) > m.cfg.PausedRetention {
			return reasonRetention
		}
		return ""
	case info.Owner != "" && !info.ExpiresAt.IsZero() && now.After(info.ExpiresAt):
		return reasonExpired
	case info.Owner != "" && !info.Deadline.IsZero() && now.After(info.Deadline):
		return "timed out" // its owner's deadline (deadline.go)
	case info.Owner != "" && now.Sub(lastUse(info)) > m.cfg.Limits.IdleTTL+m.touchEvery:
		return reasonIdle
	}
	return ""
}

// reasonExpired is why a sandbox past its maximum lifetime that no
// replica tracks is paused (or removed).
const reasonExpired = "expired"

// reasonAbandoned is why an unclaimed pooled sandbox of a gateway that
// is gone is removed.
const reasonAbandoned = "abandoned pooled"

// RemovedDuringCall reports whether a call on b that lost its runner
// (err says the connection broke or the runner stopped answering) lost
// it because another replica destroyed the sandbox meanwhile: its record
// is gone. The box is then forgotten, and the caller is told the sandbox
// is not found rather than that its next call replaces it. Whether the
// runner's connection closes first or its heartbeat runs out first
// depends on how the pod's deletion unfolds; the answer must not.
func (m *Fleet) RemovedDuringCall(ctx context.Context, b *Box, err error) bool {
	return m.records.removedDuringCall(ctx, b, err)
}

// forget stops tracking b, whose sandbox another replica (or an
// operator) removed: that replica wrote the audit record.
func (m *Fleet) forget(b *Box) {
	if !b.markGone() {
		return
	}
	m.mu.Lock()
	if m.byID[b.ID()] == b {
		delete(m.byID, b.ID())
	}
	if b.Session != "" && m.bySession[b.Session] == b {
		delete(m.bySession, b.Session)
	}
	m.mu.Unlock()
	m.log.Info("sandbox removed elsewhere; no longer tracked", "sandbox_id", b.ID(), "session_id", b.Session)
}

// ByAccess finds a sessionless sandbox by id alone, for a caller that
// proves access otherwise (a sandbox access token, accesstoken.go). A
// replicated gateway adopts one it does not track, as lookup does.
func (m *Fleet) ByAccess(ctx context.Context, id string) (*Box, error) {
	notFound := fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	m.mu.Lock()
	b := m.byID[id]
	m.mu.Unlock()
	if b == nil {
		var err error
		if b, err = m.records.lookup(ctx, asOwner, "", id); err != nil {
			return nil, err
		}
	}
	if b == nil || b.Session != "" {
		return nil, notFound
	}
	return b, nil
}

// sharedRecords are replicas' records: the provider's (sandbox.Recorder),
// where every replica reads them. See the top of this file.
type sharedRecords struct {
	m      *Fleet
	rec    sandbox.Recorder
	claims sandbox.PoolClaims // nil: the provider records no claims, and New refuses a pool
}

// adoptAll removes what is due whoever holds it, and adopts nothing: a
// replica adopts a sandbox when it is first asked for it (lookup).
func (r sharedRecords) adoptAll(ctx context.Context, infos []sandbox.Info) {
	now := time.Now()
	for _, info := range infos {
		r.untracked(ctx, info, now)
	}
}

// listFilter lists the records alone: what is due, the allowlists and
// deadlines are all there, and a cluster's pods are the larger half of
// a list.
func (sharedRecords) listFilter() sandbox.Filter { return sandbox.Filter{RecordsOnly: true} }

// untracked removes a sandbox no box of this replica tracks if it is due
// (see due), whichever replica made it; never for being untracked, as
// another replica may use it. An abandoned pooled sandbox is removed only
// while still unclaimed: the list may be older than a claim.
func (r sharedRecords) untracked(ctx context.Context, info sandbox.Info, now time.Time) {
	switch why := r.m.due(info, now); {
	case why == "":
	case why == reasonAbandoned && r.claims != nil:
		r.removeUnclaimed(ctx, info)
	case (why == reasonIdle || why == reasonExpired) && info.Session == "" && r.m.Pauses():
		r.m.pauseOrphan(ctx, info, why)
	default:
		r.m.removeOrphan(ctx, info, why)
	}
}

// listed brings b's allowlist and deadline up to date with its record.
func (r sharedRecords) listed(b *Box, info sandbox.Info, listedAt time.Time) {
	r.m.syncNetwork(b, info.Network, listedAt)
	r.m.SyncDeadline(b, info.Deadline, listedAt)
}

// unlisted forgets b: its record was there when b was tracked and is
// gone, so another replica removed it.
func (r sharedRecords) unlisted(b *Box) { r.m.forget(b) }

func (r sharedRecords) lookup(ctx context.Context, caller, session, id string) (*Box, error) {
	return r.m.lookupAs(ctx, caller, session, id)
}

func (r sharedRecords) findDefault(ctx context.Context, p identity.Identity, key string) (*Box, error) {
	return r.m.sharedDefault(ctx, p, key)
}

// settleDefault keeps the oldest of the defaults replicas made at once
// (KeepOldest); when the quota refused b, it may be for a default
// another replica made at the same time, which is then used.
func (r sharedRecords) settleDefault(ctx context.Context, p identity.Identity, key string, b *Box, err error) (*Box, bool, error) {
	if errors.Is(err, ErrQuota) {
		if found, ferr := r.m.sharedDefault(ctx, p, key); found != nil && ferr == nil {
			return found, false, nil
		}
	}
	if err != nil {
		return nil, false, err
	}
	return r.m.KeepOldest(ctx, p, key, b)
}

// owned lists p's sessionless sandboxes from the records, adopting those
// other replicas made; the listing is the record, so another replica's
// timeout shows.
func (r sharedRecords) owned(ctx context.Context, p identity.Identity) ([]*Box, error) {
	listedAt := time.Now()
	infos, err := r.m.Held(ctx, p.Tenant, "")
	if err != nil {
		return nil, err
	}
	var out []*Box
	for _, info := range infos {
		if info.Owner != p.Digest() || info.Session != "" {
			continue
		}
		if b, err := r.m.Get(ctx, p, "", info.ID); err == nil {
			r.m.SyncDeadline(b, info.Deadline, listedAt)
			out = append(out, b)
		}
	}
	return out, nil
}

// holds counts the tenant's sandboxes in the records, where every
// replica's are, but for those being created here (counted as reserved
// already). A recent count will do: admit counts again once the sandbox
// exists, as of its own write.
func (r sharedRecords) holds(ctx context.Context, tenant string) (func() int, error) {
	shared, err := r.m.Held(ctx, tenant, sandbox.AnyRecent)
	if err != nil {
		return nil, err
	}
	return func() int {
		n := 0
		for _, info := range shared {
			if !r.m.pending[info.ID] {
				n++
			}
		}
		return n
	}, nil
}

func (r sharedRecords) admit(ctx context.Context, b *Box, p identity.Identity) error {
	return r.m.Admit(ctx, b, p)
}

// kept is the record's: it holds the list last set (Recorder.SetNetwork)
// and the owner's deadline.
func (sharedRecords) kept(info sandbox.Info) ([]string, time.Time) {
	return info.Network, info.Deadline
}

func (r sharedRecords) saveDeadline(ctx context.Context, id string, t time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	err := r.rec.SetDeadline(ctx, id, t)
	if b := r.m.Tracked(id); b != nil {
		b.deadlineWritten.Store(time.Now().UnixNano()) // even on error: the write may have landed
	}
	return err
}

// setAllow writes the list to the record, and a replica that narrowed
// the list then takes the runner's egress session over (takeEgress), so
// that no other replica decides a new connection with the old list once
// this returns; if it cannot, the others apply the new list at their
// next reconciliation, and the warning says so.
func (r sharedRecords) setAllow(ctx context.Context, b *Box, rules policy.Rules) (string, error) {
	b.netMu.Lock()
	old := b.Gate.Allow()
	err := b.Gate.Update(rules, func(rules policy.Rules) error {
		if err := r.rec.SetNetwork(ctx, b.ID(), rules.Strings()); err != nil {
			return fmt.Errorf("keep the network allowlist: %w", err)
		}
		return nil
	})
	b.netWritten = time.Now() // even on error: the write may have landed
	b.netMu.Unlock()
	if err != nil || old.Within(rules) == nil {
		return "", err // a wider list: a replica that still applies the old one is stricter
	}
	if err := b.takeEgress(ctx); err != nil {
		r.m.log.Warn("take over a sandbox's egress session after narrowing its allowlist", "sandbox_id", b.ID(), "error", err)
		return fmt.Sprintf("other gateway replicas apply it within %s (this one could not take over the sandbox's egress session: %v)", r.m.cfg.ReconcileInterval, err), nil
	}
	return "", nil
}

// refresh reads b's allowlist from its record and applies it.
func (r sharedRecords) refresh(ctx context.Context, b *Box) error {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	info, err := r.m.Record(ctx, b.ID())
	if isNotFound(err) {
		r.m.forget(b)
	}
	if err != nil {
		return err
	}
	r.m.applyNetwork(b, info.Network)
	return nil
}

// refreshDeadline gives b the deadline its record holds now: another
// replica may have changed it since this one's last reconciliation.
func (r sharedRecords) refreshDeadline(ctx context.Context, b *Box) {
	readAt := time.Now()
	if info, err := r.m.Record(ctx, b.ID()); err == nil {
		r.m.SyncDeadline(b, info.Deadline, readAt)
	}
}

// removed has nothing to drop: the record goes with the sandbox.
func (sharedRecords) removed(string) {}

func (r sharedRecords) claim(ctx context.Context, sb sandbox.Sandbox, spec sandbox.Spec) (sandbox.Info, error) {
	spec.Pool = sb.Info().Pool
	return r.claims.Claim(ctx, sb.ID(), spec)
}

// pooled has nothing to prepare: the provider records the claim.
func (sharedRecords) pooled(string) error { return nil }

func (r sharedRecords) poolShared() bool { return r.claims != nil }

func (r sharedRecords) touch(ctx context.Context, id string, at time.Time) error {
	return r.rec.Touch(ctx, id, at)
}

// wire records b's uses in the provider, throttled, and brings its
// allowlist up to date from the record before this replica takes the
// runner's egress session.
func (r sharedRecords) wire(b *Box) {
	b.onUse = func() { r.m.recordUse(b) }
	b.beforeEgress = func(ctx context.Context) error { return r.refresh(ctx, b) }
}

// beforeSweep records the uses the last writes missed, so that another
// replica's sweep does not take a box used here for idle.
func (r sharedRecords) beforeSweep() { r.m.recordUses() }

// spare keeps an idle sessionless box another replica used, and a box
// whose deadline another replica extended (or whose record is gone or
// unreadable: see usedElsewhere and deadlineMoved).
func (r sharedRecords) spare(ctx context.Context, b *Box, reason string, now time.Time) bool {
	switch reason {
	case "idle":
		return b.Session == "" && r.m.usedElsewhere(ctx, b, now)
	case reasonDeadline:
		return r.m.deadlineMoved(ctx, b, now)
	}
	return false
}

// removedDuringCall: see Fleet.RemovedDuringCall.
func (r sharedRecords) removedDuringCall(ctx context.Context, b *Box, err error) bool {
	if code := protocol.CodeOf(err); code != protocol.CodeUnresponsive && code != protocol.CodeUnavailable {
		return false
	}
	if _, rerr := r.m.Record(context.WithoutCancel(ctx), b.ID()); !isNotFound(rerr) {
		return false
	}
	r.m.forget(b)
	return true
}

// removeUnclaimed removes an abandoned pooled sandbox unless it was
// claimed after it was listed.
func (r sharedRecords) removeUnclaimed(ctx context.Context, info sandbox.Info) {
	switch err := r.claims.RemoveUnclaimed(ctx, info.ID); {
	case err == nil:
		r.m.log.Info("removed "+reasonAbandoned+" sandbox", "sandbox_id", info.ID, "state", info.State)
	case errors.Is(err, sandbox.ErrClaimed), isNotFound(err):
		// Claimed since the list, or removed by another replica.
	default:
		r.m.log.Warn("remove "+reasonAbandoned+" sandbox", "sandbox_id", info.ID, "error", err)
	}
}
