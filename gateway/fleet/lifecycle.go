package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Sweep ends what is due: a sandbox idle for IdleTTL or past its maximum
// lifetime is paused (Config.OnIdle) or destroyed with its session; one
// whose owner's deadline passed is paused or destroyed as its lifecycle
// says (expireBox); a paused one kept for PausedRetention is destroyed.
// A replicated gateway first records its boxes' uses, and spares a box
// that another replica used (usedElsewhere).
func (m *Fleet) Sweep(ctx context.Context, now time.Time, endSession func(id, reason string)) {
	m.records.beforeSweep()
	for _, b := range m.Matching(func(*Box) bool { return true }) {
		if b.Paused() {
			if at := m.RemovedAt(b); !at.IsZero() && now.After(at) {
				m.end(ctx, b, reasonRetention, endSession)
			}
			continue
		}
		reason := m.dueBox(b, now)
		if reason == "" || m.records.spare(ctx, b, reason, now) {
			continue
		}
		m.expireBox(ctx, b, reason, endSession)
	}
}

// Reasons the sweep gives.
const (
	reasonIdle        = "idle"
	reasonMaxLifetime = "max lifetime"
	reasonRetention   = "paused retention"
)

// dueBox says why running box b must pause or go now, or "".
func (m *Fleet) dueBox(b *Box, now time.Time) string {
	switch {
	case now.After(b.lifetimeEnd()):
		return reasonMaxLifetime
	case now.After(b.EndAt()):
		return reasonDeadline
	case b.idleSince(now) > m.cfg.Limits.IdleTTL:
		return reasonIdle
	}
	return ""
}

// expireBox pauses b, due for reason, when the operator's policy (idle,
// max lifetime) or its owner's lifecycle (deadline) says so and the
// provider can; otherwise, or when the pause fails, it destroys b. An
// idle sandbox that its tenant's paused quota has no room for stays as
// it is until its maximum lifetime: destroying it would lose its files.
func (m *Fleet) expireBox(ctx context.Context, b *Box, reason string, endSession func(id, reason string)) {
	pause := m.Pauses()
	if reason == reasonDeadline {
		_, can := m.pauser()
		pause = can && b.Info().Lifecycle.PauseOnTimeout
	}
	if pause {
		memory := MemoryIfCan
		if reason == reasonDeadline && b.Info().Lifecycle.FilesOnly {
			memory = MemoryDrop
		}
		err := m.pause(ctx, b, ownerOnly(b), reason, PauseOptions{Memory: memory, EvenBusy: reason != reasonIdle})
		switch {
		case err == nil || errors.Is(err, ErrSandboxGone):
			return
		case errors.Is(err, ErrPausedQuota) && reason == reasonIdle:
			m.log.Warn("idle sandbox kept running: its tenant's paused quota is full", "sandbox_id", b.ID(), "tenant", b.Tenant, "error", err)
			return
		case b.inUse.Load() > 0:
			return // a call came in meanwhile: no longer idle
		}
		m.log.Warn("pause a due sandbox; destroying it instead", "sandbox_id", b.ID(), "reason", reason, "error", err)
	}
	m.end(ctx, b, reason, endSession)
}

// end destroys b for reason, and its session with it when it has one.
func (m *Fleet) end(ctx context.Context, b *Box, reason string, endSession func(id, reason string)) {
	if b.Session != "" && endSession != nil {
		endSession(b.Session, reason)
		return
	}
	_ = m.Destroy(ctx, b, ownerOnly(b), reason)
}

// Reconcile runs at start. Expired sandboxes are due anyway: they are
// removed, workspaces included, as are workspaces and socket dirs left
// without a container. Unexpired sessionless sandboxes are adopted,
// because their sandbox_id is the only handle their owner has and it is
// still valid; one whose container stopped meanwhile is replaced on its
// next call, on its kept workspace. Paused sandboxes are adopted until
// their retention ends. Session-bound ones lost their session with the
// process that held it: a gateway that pauses idle sandboxes adopts them
// as sessionless (their owner reaches them by id, and they pause when
// idle), one that destroys them removes them. The instance lock (sandbox/docker)
// guarantees no live gateway owns what is removed here. Replicas adopt
// nothing at start and remove only what is due, whoever made it (see
// records.adoptAll).
func (m *Fleet) Reconcile(ctx context.Context) error {
	infos, err := m.provider.List(ctx, m.records.listFilter())
	if err != nil {
		return err
	}
	m.records.adoptAll(ctx, infos)
	m.rollBackSnapshots(ctx)
	return nil
}

// adopt takes over a sessionless sandbox a previous gateway made, with
// its tenant, its allowlist (the one last set, see netstate.go) and the
// deadline its owner set (deadline.go). A
// client's default stays its default: infos come oldest first, and the
// oldest of a client's defaults is the one kept (see defaultbox.go).
func (m *Fleet) adopt(ctx context.Context, info sandbox.Info) {
	b, running := m.adoptee(ctx, info)
	m.mu.Lock()
	m.byID[b.ID()] = b
	if b.clientKey != "" && m.byClient[b.clientKey] == nil {
		m.byClient[b.clientKey] = b
	}
	m.mu.Unlock()
	m.adopted(b, info, running)
}

// adoptee makes the box of a sandbox described by info, which another
// gateway made, without tracking it yet. It reports whether its runner
// runs.
func (m *Fleet) adoptee(ctx context.Context, info sandbox.Info) (*Box, bool) {
	sb, err := m.provider.Get(ctx, info.ID)
	running := err == nil
	paused := !running && info.State == sandbox.StatePaused
	if running && (info.State == sandbox.StatePaused || !info.PausedAt.IsZero()) {
		sb = m.unmark(ctx, info.ID, sb)
	}
	switch {
	case paused:
		sb = pausedSandbox{info: info, p: m.provider} // resumed on first use
	case !running:
		sb = stopped{info: info, p: m.provider} // replaced on first use
	case info.Pool != "":
		sb = claimed{Sandbox: sb, info: info} // the claim's owner and expiry
	}
	// The session it was bound to ended with the gateway that served
	// it; its owner reaches it by its id now (a gateway that pauses
	// keeps such sandboxes rather than remove their files).
	session := ""
	b := newBox(sb, info.Owner, info.Tenant, session, m.lifetimeAfterResume(info))
	b.paused.Store(paused)
	b.pausedAt, b.pausedFor = info.PausedAt, info.PausedFor
	b.pausedBytes.Store(info.DiskBytes)
	b.recorded.Store(lastUse(info).UnixNano()) // the use its listing holds
	if info.Session != "" {
		// Its session is gone, and with it every use to come: idle
		// now, so the first sweep pauses it and frees its live slot.
		b.lastUsed.Store(0)
	}
	list, deadline := m.records.kept(info)
	m.wire(b, identity.Identity{Issuer: "sandgate", Subject: "owner:" + info.Owner, Tenant: info.Tenant}, m.parseAllow(info.ID, list))
	if !deadline.IsZero() {
		b.deadline.Store(deadline.UnixNano()) // armed once tracked (adopted)
	}
	return b, running
}

// unmark rolls back a pause cut short between marking sandbox id's record
// paused and stopping it (a crash; Kubernetes records the mark apart
// from the pod): the sandbox runs, so its record must not say paused,
// or quotas and retention would count it as paused. The provider's
// resume of a running sandbox only clears the mark. Should a pause by
// another replica be under way, its stop comes next and the sandbox's
// next call replaces it, files kept.
func (m *Fleet) unmark(ctx context.Context, id string, running sandbox.Sandbox) sandbox.Sandbox {
	pz, ok := m.pauser()
	if !ok {
		return running
	}
	sb, err := pz.Resume(ctx, id)
	if err != nil {
		m.log.Warn("clear the pause mark of a running sandbox", "sandbox_id", id, "error", err)
		return running
	}
	m.log.Info("a pause cut short rolled back: the sandbox runs", "sandbox_id", id)
	return sb
}

// parseAllow reads a sandbox's recorded allowlist. Fail closed: a list
// this gateway cannot read allows nothing.
func (m *Fleet) parseAllow(id string, list []string) policy.Rules {
	allow, err := policy.ParseRules(list)
	if err != nil {
		m.log.Warn("sandbox's network policy unreadable; it gets none", "sandbox_id", id, "error", err)
		return nil
	}
	return allow
}

// adopted logs the adoption of b, arms its deadline and, if its runner
// runs, brings up its egress session: its background processes may be
// using the network already, and should not wait for the owner's next
// call.
func (m *Fleet) adopted(b *Box, info sandbox.Info, running bool) {
	m.log.Info("adopted sandbox", "sandbox_id", info.ID, "state", info.State)
	if d := deadlineOf(b); !d.IsZero() {
		m.armDeadline(b, d) // one already past removes it now
	}
	if running {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), protocol.HandshakeTimeout)
			defer cancel()
			_, _ = b.Connect(ctx)
		}()
	}
}

// ReconcileTracked runs on a timer. It retries the removal of destroyed
// boxes until their sandbox is really gone, forgets those it no longer
// finds, brings tracked boxes up to date with their records, and hands
// every sandbox no box tracks to the records to judge: a single gateway
// removes what it lost track of (a container whose create outlived its
// caller, a removal that failed); replicas remove only what is due, and
// forget a box whose record another replica removed.
func (m *Fleet) ReconcileTracked(ctx context.Context, now time.Time) {
	before := m.Matching(func(*Box) bool { return true }) // tracked before the list: their records exist
	listedAt := time.Now()
	infos, err := m.provider.List(ctx, m.records.listFilter())
	if err != nil {
		m.log.Warn("reconcile sandboxes", "error", err)
		return
	}
	listed := map[string]bool{}
	for _, info := range infos {
		listed[info.ID] = true
		m.mu.Lock()
		b, pending := m.byID[info.ID], m.pending[info.ID]
		m.mu.Unlock()
		switch {
		case b != nil && b.IsGone():
			if err := m.remove(ctx, b); err != nil {
				m.log.Warn("retry sandbox removal", "sandbox_id", b.ID(), "error", err)
			}
		case b != nil:
			m.records.listed(b, info, listedAt)
		case pending, m.pool.holds(info.ID):
			// Being created, or pooled here.
		default:
			m.records.untracked(ctx, info, now)
		}
	}
	for _, b := range before {
		if !listed[b.ID()] {
			m.records.unlisted(b)
		}
	}
	// Destroyed boxes whose sandbox no longer exists at all are done.
	m.mu.Lock()
	for id, b := range m.byID {
		if b.IsGone() && !listed[id] {
			delete(m.byID, id)
		}
	}
	m.mu.Unlock()
}

// removeOrphan removes a sandbox no box tracks, workspace included.
func (m *Fleet) removeOrphan(ctx context.Context, info sandbox.Info, why string) {
	if err := m.provider.Remove(ctx, info.ID); err != nil && !isNotFound(err) {
		m.log.Warn("remove "+why+" sandbox", "sandbox_id", info.ID, "error", err)
		return
	}
	m.records.removed(info.ID)
	m.log.Info("removed "+why+" sandbox", "sandbox_id", info.ID, "session_id", info.Session, "state", info.State)
}

// pauseOrphan pauses a sandbox that no box of this replica tracks, due
// for why (idle, or at its maximum lifetime), where idle sandboxes
// pause: the replica that served it may be gone, and its files must not
// go with it. Any replica's next call for it resumes it.
func (m *Fleet) pauseOrphan(ctx context.Context, info sandbox.Info, why string) {
	pz, ok := m.pauser()
	if !ok {
		m.removeOrphan(ctx, info, why)
		return
	}
	start := time.Now()
	err := pz.Pause(ctx, info.ID, why)
	if isNotFound(err) {
		return // removed meanwhile
	}
	ev := &audit.Event{Kind: audit.KindSandboxPause, Principal: identity.Identity{Issuer: "sandgate", Subject: "owner:" + info.Owner},
		SandboxID: info.ID, Summary: map[string]string{"reason": why, "memory": "dropped"}, Outcome: audit.OutcomeOK,
		DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
	}
	m.appendAudit(ctx, ev)
	m.metrics.SandboxPauses.WithLabelValues(why, ev.Outcome).Inc()
	if err != nil {
		m.log.Warn("pause "+why+" sandbox", "sandbox_id", info.ID, "error", err)
		return
	}
	m.log.Info("paused "+why+" sandbox", "sandbox_id", info.ID, "session_id", info.Session)
}

// CloseAll runs at shutdown. It empties the warm pool and ends the boxes
// of legacy sessions: a session id lives in this process only, so no
// client could reach those sandboxes again, and a restarted gateway would
// remove them as orphans anyway. Every sessionless sandbox (sandbox_create,
// a client's default, the E2B API) stays, with its workspace, id, owner,
// deadline and egress list on disk: its id is its owner's only handle and
// is still valid, so stopping the gateway, as an upgrade or a restart
// does, must not cost it its files. Only the connections to those
// sandboxes close; the next gateway on the instance (or another replica)
// adopts them.
func (m *Fleet) CloseAll(ctx context.Context) {
	m.pool.close(ctx)
	for _, b := range m.Matching(func(*Box) bool { return true }) {
		if b.Session == "" {
			b.Mu.Lock()
			b.DropClient()
			b.Mu.Unlock()
			continue
		}
		_ = m.Destroy(ctx, b, ownerOnly(b), "shutdown")
	}
}

// stopped stands for an adopted sandbox whose container is not running:
// dialling it fails as for a dead runner, so its first call replaces it.
type stopped struct {
	info sandbox.Info
	p    sandbox.Provider
}

func (s stopped) ID() string         { return s.info.ID }
func (s stopped) Info() sandbox.Info { return s.info }
func (s stopped) Dial(context.Context) (net.Conn, error) {
	return nil, fmt.Errorf("dial sandbox %s: container is %s: %w", s.info.ID, s.info.State, sandbox.ErrNotFound)
}
func (s stopped) Destroy(ctx context.Context) error { return s.p.Remove(ctx, s.info.ID) }
