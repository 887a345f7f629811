package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/sandbox"
)

var (
	errSandboxGone = errors.New("the sandbox was destroyed; create a new one with sandbox_create, or start a new MCP session")
	errNoSandbox   = errors.New("this request has no MCP session and no sandbox_id, and this client has no default sandbox yet: any sandbox tool creates it, or call sandbox_create and pass the sandbox_id it returns")
	errQuota       = errors.New("sandbox quota reached")
)

// sandboxes owns every box this gateway manages.
type sandboxes struct {
	provider sandbox.Provider
	cfg      Config
	audit    audit.Sink
	log      *slog.Logger
	egress   *egress.Service // nil: no egress sessions (unit tests)
	metrics  *metrics.Metrics
	pool     *pool // nil: no warm pool
	// rec is set when other replicas share the provider (Config.Replicated,
	// replicas.go); touchEvery throttles the uses recorded there.
	rec        sandbox.Recorder
	touchEvery time.Duration
	// claims is set when the pool's claims are recorded by the provider
	// (replicated gateways; claims.go keeps them in files otherwise).
	claims sandbox.PoolClaims

	mu        sync.Mutex
	byID      map[string]*box
	bySession map[string]*box          // the session's default sandbox
	byClient  map[string]*box          // a sessionless client's default sandbox (defaultbox.go)
	creating  map[string]chan struct{} // session → closed when its first create finishes
	reserved  map[string]int           // tenant → creations in flight, counted against the quota
	pending   map[string]bool          // sandbox ids being created; reconciliation leaves them alone
}

func newSandboxes(p sandbox.Provider, cfg Config, sink audit.Sink, log *slog.Logger) *sandboxes {
	m := &sandboxes{provider: p, cfg: cfg, audit: sink, log: log, touchEvery: cfg.Limits.IdleTTL / 8,
		byID: map[string]*box{}, bySession: map[string]*box{}, byClient: map[string]*box{}, creating: map[string]chan struct{}{}, reserved: map[string]int{}, pending: map[string]bool{}}
	if cfg.Replicated {
		m.rec, _ = p.(sandbox.Recorder) // New refuses a provider that is none
		m.claims, _ = p.(sandbox.PoolClaims)
	}
	return m
}

// forSession returns the session's sandbox, creating it on first use.
// Concurrent first calls of one session wait for a single creation.
func (m *sandboxes) forSession(ctx context.Context, p identity.Identity, session string) (*box, error) {
	for {
		m.mu.Lock()
		if b := m.bySession[session]; b != nil {
			m.mu.Unlock()
			if b.owner != p.Digest() {
				return nil, sandbox.ErrNotFound
			}
			return b, nil
		}
		wait, busy := m.creating[session]
		if !busy {
			done := make(chan struct{})
			m.creating[session] = done
			m.mu.Unlock()
			b, err := m.create(ctx, p, session, m.cfg.Image, m.defaultAllow(p.Tenant))
			m.mu.Lock()
			delete(m.creating, session)
			if err == nil {
				m.bySession[session] = b
			}
			m.mu.Unlock()
			close(done)
			return b, err
		}
		m.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// get returns the sandbox id if p owns it and, for a sandbox bound to a
// legacy session, the call comes from that session. Anyone else gets
// ErrNotFound and learns nothing about whether it exists. A replicated
// gateway looks a sandbox it does not track up in the provider (lookup).
func (m *sandboxes) get(ctx context.Context, p identity.Identity, session, id string) (*box, error) {
	m.mu.Lock()
	b := m.byID[id]
	m.mu.Unlock()
	if b == nil && m.replicated() {
		return m.lookup(ctx, p, session, id)
	}
	if b == nil || !allows(b.owner, b.session, p, session) {
		return nil, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	return b, nil
}

// allows reports whether a sandbox of owner, bound to session ("" for
// none), may be used by p calling from callerSession.
func allows(owner, session string, p identity.Identity, callerSession string) bool {
	return sessionAllows(owner, session, p.Digest(), callerSession)
}

// sessionAllows is allows for the principal whose Digest is caller.
func sessionAllows(owner, session, caller, callerSession string) bool {
	return owner == caller && (session == "" || session == callerSession)
}

// defaultAllow is the egress allowlist of a sandbox whose creator asked
// for none.
func (m *sandboxes) defaultAllow(tenant string) policy.Rules {
	return m.cfg.Egress.Policy.For(tenant).Default
}

// wire gives b its egress state and metrics and, in a replicated
// gateway, the hooks that share its uses and allowlist with the others.
func (m *sandboxes) wire(b *box, who identity.Identity, allow policy.Rules) {
	b.creator = who
	b.gate = egress.NewGate(b.id(), b.tenant, who, allow, m.cfg.Egress.Limits)
	b.egress = m.egress
	b.metrics = m.metrics
	if m.replicated() {
		b.onUse = func() { m.recordUse(b) }
		b.beforeEgress = func(ctx context.Context) error { return m.refreshNetwork(ctx, b) }
	}
}

// counted records a sandbox start from source in the metrics.
func (m *sandboxes) counted(source string, began time.Time, err error) {
	outcome := audit.OutcomeOK
	if err != nil {
		outcome = audit.OutcomeError
	}
	m.metrics.SandboxStarts.WithLabelValues(source, outcome).Inc()
	metrics.Since(m.metrics.SandboxStartSeconds.WithLabelValues(source), began)
}

// create starts a sandbox for p, allowed to reach allow, and records it.
func (m *sandboxes) create(ctx context.Context, p identity.Identity, session, image string, allow policy.Rules) (*box, error) {
	return m.createBox(ctx, p, newSandbox{session: session, image: image, allow: allow})
}

// newSandbox says what createBox makes.
type newSandbox struct {
	session string // the legacy session it is bound to, or ""
	client  string // defaultKey of the client whose default it is, or ""
	image   string
	allow   policy.Rules
	// template and metadata are what an E2B client created it with
	// (sandbox.Spec.Template, Metadata); kept in the provider's record.
	template string
	metadata map[string]string
}

// createBox is create of a sandbox that may be a client's default.
func (m *sandboxes) createBox(ctx context.Context, p identity.Identity, n newSandbox) (*box, error) {
	session, image, allow := n.session, n.image, n.allow
	release, err := m.reserve(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	now := time.Now()
	// The id is chosen here, not by the provider, so that reconciliation
	// knows the container being made is ours before Create returns.
	spec := sandbox.Spec{ID: newSandboxID(), Image: image, Limits: m.cfg.Limits, Owner: p.Digest(), Session: session,
		Client: n.client, Tenant: p.Tenant, Network: allow.Strings(), ExpiresAt: now.Add(m.cfg.Limits.MaxLifetime),
		Template: n.template, Metadata: n.metadata}
	m.setPending(spec.ID, true)
	defer m.setPending(spec.ID, false)
	sb, runner, source, err := m.startSandbox(ctx, spec)
	m.counted(source, now, err)
	if source == metrics.StartPool {
		// Held by the pool (so reconciliation leaves it alone) until it
		// is tracked below or destroyed.
		defer m.pool.release(sb.ID())
	}
	ev := &audit.Event{Kind: audit.KindSandboxCreate, Principal: p, Session: session,
		Summary: map[string]string{"image": image}, Outcome: "ok", DurationMs: time.Since(now).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = "error", err.Error()
		m.appendAudit(ctx, ev)
		return nil, err
	}
	ev.SandboxID, ev.ContainerID = sb.ID(), sb.Info().ContainerID
	b := newBox(sb, p.Digest(), p.Tenant, session, spec.ExpiresAt)
	b.recorded.Store(b.lastUsed.Load()) // the record's creation time stands for its first use
	m.wire(b, p, allow)
	if err := m.audit.Append(ctx, ev); err != nil {
		// Nothing may run unaudited: without its create record the
		// sandbox must not exist either.
		if runner != nil {
			_ = runner.Close()
		}
		_ = sb.Destroy(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("%w: %v", errAuditDown, err)
	}
	b.client = runner // a pooled sandbox's; its first call uses it (box.connect)
	m.mu.Lock()
	m.byID[b.id()] = b
	m.mu.Unlock()
	m.log.Info("sandbox created", "sandbox_id", b.id(), "session_id", session, "image", image, "duration_ms", ev.DurationMs)
	if m.replicated() {
		if err := m.admit(ctx, b, p); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// reserve takes one of tenant's quota slots for a creation in flight, so
// concurrent creations cannot overshoot the quota. The returned func gives
// the reservation back once the sandbox is recorded (or failed). A
// replicated gateway counts the tenant's sandboxes in the provider, where
// every replica's are, and checks again after the creation (admit).
func (m *sandboxes) reserve(ctx context.Context, tenant string) (func(), error) {
	var shared []sandbox.Info
	if m.replicated() {
		var err error
		// A recent count will do: admit counts again once the sandbox
		// exists, as of its own write.
		if shared, err = m.held(ctx, tenant, sandbox.AnyRecent); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.reserved[tenant]
	if m.replicated() {
		for _, info := range shared {
			if !m.pending[info.ID] { // counted in reserved already
				n++
			}
		}
	} else {
		for _, b := range m.byID {
			if b.tenant == tenant {
				n++
			}
		}
	}
	if n >= m.cfg.MaxSandboxesPerTenant {
		return nil, quotaError(n, m.cfg.MaxSandboxesPerTenant)
	}
	m.reserved[tenant]++
	return func() {
		m.mu.Lock()
		m.reserved[tenant]--
		m.mu.Unlock()
	}, nil
}

// quotaError is the error of a tenant that holds n sandboxes of limit.
func quotaError(n, limit int) error {
	return fmt.Errorf("%w: your tenant holds %d live sandboxes (limit %d); destroy one with sandbox_destroy first", errQuota, n, limit)
}

// perTenant counts the tracked sandboxes of each tenant (adopted ones
// whose tenant is unknown count under "").
func (m *sandboxes) perTenant() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := map[string]int{}
	for _, b := range m.byID {
		n[b.tenant]++
	}
	return n
}

// destroy removes b for reason ("sandbox_destroy", "session ended", "idle",
// "max lifetime", "shutdown"). It runs under its own timeout so a
// cancelled request cannot leave a container behind. The box stays
// tracked (gone, counted against the quota) until its container is really
// removed; when the removal fails, reconciliation retries it.
func (m *sandboxes) destroy(ctx context.Context, b *box, p identity.Identity, reason string) error {
	m.mu.Lock()
	if m.byID[b.id()] != b {
		m.mu.Unlock()
		return nil // someone else already destroyed it
	}
	if b.session != "" && m.bySession[b.session] == b {
		delete(m.bySession, b.session)
	}
	m.mu.Unlock()
	if !b.markGone() {
		return nil // a destroy is under way
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := m.remove(ctx, b)
	ev := &audit.Event{Kind: audit.KindSandboxDestroy, Principal: p, Session: b.session, SandboxID: b.id(),
		ContainerID: b.info().ContainerID, Summary: map[string]string{"reason": reason}, Outcome: "ok", DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = "error", err.Error()
	}
	m.appendAudit(ctx, ev)
	if err != nil {
		m.log.Warn("destroy sandbox; reconciliation will retry", "sandbox_id", b.id(), "session_id", b.session, "reason", reason, "error", err)
	} else {
		m.log.Info("sandbox destroyed", "sandbox_id", b.id(), "session_id", b.session, "reason", reason)
	}
	return err
}

// remove removes b's sandbox and, once it is gone, stops tracking b.
func (m *sandboxes) remove(ctx context.Context, b *box) error {
	err := m.provider.Remove(ctx, b.id())
	if errors.Is(err, sandbox.ErrNotFound) {
		err = nil // removed from outside; the end state is what we wanted
	}
	if err == nil {
		m.allowFiles().drop(b.id())
		m.claimFiles().drop(b.id())
		m.deadlineFiles().drop(b.id())
		m.mu.Lock()
		if m.byID[b.id()] == b {
			delete(m.byID, b.id())
		}
		m.mu.Unlock()
	}
	return err
}

func (m *sandboxes) setPending(id string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.pending[id] = true
	} else {
		delete(m.pending, id)
	}
}

// newSandboxID returns 128 random bits in hex. crypto/rand.Read never fails.
func newSandboxID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// endSession destroys every sandbox bound to session.
func (m *sandboxes) endSession(ctx context.Context, session, reason string) {
	for _, b := range m.matching(func(b *box) bool { return b.session == session }) {
		_ = m.destroy(ctx, b, ownerOnly(b), reason)
	}
}

// matching returns the boxes for which keep is true.
func (m *sandboxes) matching(keep func(*box) bool) []*box {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*box
	for _, b := range m.byID {
		if !b.isGone() && keep(b) {
			out = append(out, b)
		}
	}
	return out
}

// appendAudit records an event whose failure cannot be undone (a destroy
// already happened); it is logged for the operator.
func (m *sandboxes) appendAudit(ctx context.Context, ev *audit.Event) {
	if err := m.audit.Append(context.WithoutCancel(ctx), ev); err != nil {
		m.log.Error("audit append failed", "kind", ev.Kind, "sandbox_id", ev.SandboxID, "error", err)
	}
}

// ownerOnly is the principal recorded for actions the gateway takes on its
// own (idle expiry, shutdown): only the owner digest is known then.
func ownerOnly(b *box) identity.Identity {
	return identity.Identity{Issuer: "sandgate", Subject: "owner:" + b.owner}
}
