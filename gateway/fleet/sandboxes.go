package fleet

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
	ErrSandboxGone = errors.New("the sandbox was destroyed; create a new one with sandbox_create, or start a new MCP session")
	ErrNoSandbox   = errors.New("this request has no MCP session and no sandbox_id, and this client has no default sandbox yet: any sandbox tool creates it, or call sandbox_create and pass the sandbox_id it returns")
	ErrQuota       = errors.New("sandbox quota reached")
)

// Fleet owns every sandbox this gateway manages (each a Box).
type Fleet struct {
	provider sandbox.Provider
	cfg      Config
	audit    audit.Sink
	log      *slog.Logger
	egress   *egress.Service // nil: no egress sessions (unit tests)
	metrics  *metrics.Metrics
	pool     *pool // nil: no warm pool
	// records keeps what other gateways must know of each sandbox: in
	// files for a single gateway, in the provider's records for replicas
	// (records.go). touchEvery throttles the uses recorded there.
	records    records
	touchEvery time.Duration

	mu        sync.Mutex
	byID      map[string]*Box
	bySession map[string]*Box          // the session's default sandbox
	byClient  map[string]*Box          // a sessionless client's default sandbox (defaultbox.go)
	creating  map[string]chan struct{} // session → closed when its first create finishes
	reserved  map[string]int           // tenant → creations in flight, counted against the quota
	pausing   map[string]pausedUse     // tenant → pauses in flight, counted against the paused quota
	snapshots snapshotBook
	pending   map[string]bool // sandbox ids being created; reconciliation leaves them alone
}

// New builds the fleet of provider p: sandboxes audited to sink, egress
// sessions served by eg (nil: none, for unit tests), and its gauges
// (live sandboxes, the warm pool's sizes) registered in mt. It starts
// nothing; Reconcile adopts what the provider already runs and Start
// runs the warm pool.
func New(p sandbox.Provider, cfg Config, sink audit.Sink, log *slog.Logger, mt *metrics.Metrics, eg *egress.Service) *Fleet {
	m := &Fleet{provider: p, cfg: cfg, audit: sink, log: log, metrics: mt, egress: eg, touchEvery: cfg.Limits.IdleTTL / 8,
		byID: map[string]*Box{}, bySession: map[string]*Box{}, byClient: map[string]*Box{}, creating: map[string]chan struct{}{}, reserved: map[string]int{}, pausing: map[string]pausedUse{}, pending: map[string]bool{}}
	m.records = fileRecords{m}
	if cfg.Replicated {
		rec, _ := p.(sandbox.Recorder) // the gateway refuses a provider that is none
		claims, _ := p.(sandbox.PoolClaims)
		m.records = sharedRecords{m: m, rec: rec, claims: claims}
	}
	mt.MustRegister(liveSandboxes{m})
	if len(cfg.Pool) > 0 {
		m.pool = newPool(m, cfg.Pool)
		mt.MustRegister(poolSizes{m.pool})
	}
	return m
}

// Start runs the warm pool, if there is one, until ctx ends.
func (m *Fleet) Start(ctx context.Context) {
	if m.pool != nil {
		go m.pool.run(ctx)
	}
}

// SessionBox returns the sandbox of legacy session, or nil when it has
// none yet.
func (m *Fleet) SessionBox(session string) *Box {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bySession[session]
}

// ForSession returns the session's sandbox, creating it on first use.
// Concurrent first calls of one session wait for a single creation.
func (m *Fleet) ForSession(ctx context.Context, p identity.Identity, session string) (*Box, error) {
	for {
		m.mu.Lock()
		if b := m.bySession[session]; b != nil {
			m.mu.Unlock()
			if b.Owner != p.Digest() {
				return nil, sandbox.ErrNotFound
			}
			return b, nil
		}
		wait, busy := m.creating[session]
		if !busy {
			done := make(chan struct{})
			m.creating[session] = done
			m.mu.Unlock()
			b, err := m.Create(ctx, p, session, m.cfg.Image, m.DefaultAllow(p.Tenant))
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

// Get returns the sandbox id if p owns it and, for a sandbox bound to a
// legacy session, the call comes from that session. Anyone else gets
// ErrNotFound and learns nothing about whether it exists. A replicated
// gateway looks a sandbox it does not track up in the provider (lookup).
func (m *Fleet) Get(ctx context.Context, p identity.Identity, session, id string) (*Box, error) {
	m.mu.Lock()
	b := m.byID[id]
	m.mu.Unlock()
	if b == nil {
		return m.records.lookup(ctx, p.Digest(), session, id)
	}
	if b == nil || !Allows(b.Owner, b.Session, p, session) {
		return nil, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	return b, nil
}

// Allows reports whether a sandbox of owner, bound to session ("" for
// none), may be used by p calling from callerSession.
func Allows(owner, session string, p identity.Identity, callerSession string) bool {
	return sessionAllows(owner, session, p.Digest(), callerSession)
}

// sessionAllows is allows for the principal whose Digest is caller.
func sessionAllows(owner, session, caller, callerSession string) bool {
	return owner == caller && (session == "" || session == callerSession)
}

// DefaultAllow is the egress allowlist of a sandbox whose creator asked
// for none.
func (m *Fleet) DefaultAllow(tenant string) policy.Rules {
	return m.cfg.EgressPolicy.For(tenant).Default
}

// wire gives b its egress state and metrics and, in a replicated
// gateway, the hooks that share its uses and allowlist with the others.
func (m *Fleet) wire(b *Box, who identity.Identity, allow policy.Rules) {
	b.Creator = who
	b.Gate = egress.NewGate(b.ID(), b.Tenant, who, allow, m.cfg.EgressLimits)
	b.egress = m.egress
	b.metrics = m.metrics
	m.records.wire(b)
}

// counted records a sandbox start from source in the metrics.
func (m *Fleet) counted(source string, began time.Time, err error) {
	outcome := audit.OutcomeOK
	if err != nil {
		outcome = audit.OutcomeError
	}
	m.metrics.SandboxStarts.WithLabelValues(source, outcome).Inc()
	metrics.Since(m.metrics.SandboxStartSeconds.WithLabelValues(source), began)
}

// Create starts a sandbox for p, allowed to reach allow, and records it.
func (m *Fleet) Create(ctx context.Context, p identity.Identity, session, image string, allow policy.Rules) (*Box, error) {
	return m.CreateBox(ctx, p, Spec{Session: session, Image: image, Allow: allow})
}

// Spec says what CreateBox makes.
type Spec struct {
	Session string // the legacy session it is bound to, or ""
	Client  string // ClientKey of the client whose default it is, or ""
	Image   string
	Allow   policy.Rules
	// Template, metadata and lifecycle are what an E2B client created
	// it with (sandbox.Spec's); kept in the provider's record.
	Template  string
	Metadata  map[string]string
	Lifecycle sandbox.Lifecycle
	// Snapshot, when set, is the id of a snapshot of the caller's tenant
	// whose files the sandbox starts with; its image is the snapshot's.
	Snapshot string
}

// CreateBox is create of a sandbox that may be a client's default.
func (m *Fleet) CreateBox(ctx context.Context, p identity.Identity, n Spec) (*Box, error) {
	session, image, allow := n.Session, n.Image, n.Allow
	if n.Snapshot != "" {
		snap, err := m.SnapshotFor(p, n.Snapshot)
		if err != nil {
			return nil, err
		}
		image = snap.Image
	}
	release, err := m.reserve(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	defer release()
	now := time.Now()
	// The id is chosen here, not by the provider, so that reconciliation
	// knows the container being made is ours before Create returns.
	spec := sandbox.Spec{ID: newSandboxID(), Image: image, Limits: m.cfg.Limits, Owner: p.Digest(), Session: session,
		Client: n.Client, Tenant: p.Tenant, Network: allow.Strings(), ExpiresAt: now.Add(m.cfg.Limits.MaxLifetime),
		Template: n.Template, Metadata: n.Metadata, Lifecycle: n.Lifecycle, Snapshot: n.Snapshot}
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
		return nil, fmt.Errorf("%w: %v", audit.ErrUnavailable, err)
	}
	b.Client = runner // a pooled sandbox's; its first call uses it (box.connect)
	m.mu.Lock()
	m.byID[b.ID()] = b
	m.mu.Unlock()
	m.log.Info("sandbox created", "sandbox_id", b.ID(), "session_id", session, "image", image, "duration_ms", ev.DurationMs)
	if err := m.records.admit(ctx, b, p); err != nil {
		return nil, err
	}
	return b, nil
}

// reserve takes one of tenant's quota slots for a creation in flight, so
// concurrent creations cannot overshoot the quota. The returned func gives
// the reservation back once the sandbox is recorded (or failed). A
// replicated gateway counts the tenant's sandboxes in the provider, where
// every replica's are, and checks again after the creation (admit).
func (m *Fleet) reserve(ctx context.Context, tenant string) (func(), error) {
	holds, err := m.records.holds(ctx, tenant)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.reserved[tenant] + holds()
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
	return fmt.Errorf("%w: your tenant holds %d live sandboxes (limit %d); destroy one with sandbox_destroy first", ErrQuota, n, limit)
}

// PerTenant counts the tracked sandboxes of each tenant that are not
// paused (adopted ones whose tenant is unknown count under "").
func (m *Fleet) PerTenant() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := map[string]int{}
	for _, b := range m.byID {
		if !b.paused.Load() {
			n[b.Tenant]++
		}
	}
	return n
}

// Destroy removes b for reason ("sandbox_destroy", "session ended", "idle",
// "max lifetime", "shutdown"). It runs under its own timeout so a
// cancelled request cannot leave a container behind. The box stays
// tracked (gone, counted against the quota) until its container is really
// removed; when the removal fails, reconciliation retries it.
func (m *Fleet) Destroy(ctx context.Context, b *Box, p identity.Identity, reason string) error {
	m.mu.Lock()
	if m.byID[b.ID()] != b {
		m.mu.Unlock()
		return nil // someone else already destroyed it
	}
	if b.Session != "" && m.bySession[b.Session] == b {
		delete(m.bySession, b.Session)
	}
	m.mu.Unlock()
	if !b.markGone() {
		return nil // a destroy is under way
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := m.remove(ctx, b)
	ev := &audit.Event{Kind: audit.KindSandboxDestroy, Principal: p, Session: b.Session, SandboxID: b.ID(),
		ContainerID: b.Info().ContainerID, Summary: map[string]string{"reason": reason}, Outcome: "ok", DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = "error", err.Error()
	}
	m.appendAudit(ctx, ev)
	if err != nil {
		m.log.Warn("destroy sandbox; reconciliation will retry", "sandbox_id", b.ID(), "session_id", b.Session, "reason", reason, "error", err)
	} else {
		m.log.Info("sandbox destroyed", "sandbox_id", b.ID(), "session_id", b.Session, "reason", reason)
	}
	return err
}

// remove removes b's sandbox and, once it is gone, stops tracking b.
func (m *Fleet) remove(ctx context.Context, b *Box) error {
	err := m.provider.Remove(ctx, b.ID())
	if errors.Is(err, sandbox.ErrNotFound) {
		err = nil // removed from outside; the end state is what we wanted
	}
	if err == nil {
		m.allowFiles().drop(b.ID())
		m.claimFiles().drop(b.ID())
		m.deadlineFiles().drop(b.ID())
		m.mu.Lock()
		if m.byID[b.ID()] == b {
			delete(m.byID, b.ID())
		}
		m.mu.Unlock()
	}
	return err
}

func (m *Fleet) setPending(id string, on bool) {
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

// EndSession destroys every sandbox bound to session.
func (m *Fleet) EndSession(ctx context.Context, session, reason string) {
	for _, b := range m.Matching(func(b *Box) bool { return b.Session == session }) {
		_ = m.Destroy(ctx, b, ownerOnly(b), reason)
	}
}

// Matching returns the boxes for which keep is true.
func (m *Fleet) Matching(keep func(*Box) bool) []*Box {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Box
	for _, b := range m.byID {
		if !b.IsGone() && keep(b) {
			out = append(out, b)
		}
	}
	return out
}

// appendAudit records an event whose failure cannot be undone (a destroy
// already happened); it is logged for the operator.
func (m *Fleet) appendAudit(ctx context.Context, ev *audit.Event) {
	if err := m.audit.Append(context.WithoutCancel(ctx), ev); err != nil {
		m.log.Error("audit append failed", "kind", ev.Kind, "sandbox_id", ev.SandboxID, "error", err)
	}
}

// ownerOnly is the principal recorded for actions the gateway takes on its
// own (idle expiry, shutdown): only the owner digest is known then.
func ownerOnly(b *Box) identity.Identity {
	return identity.Identity{Issuer: "sandgate", Subject: "owner:" + b.Owner}
}

// isNotFound reports whether err says the provider has no such sandbox.
func isNotFound(err error) bool { return errors.Is(err, sandbox.ErrNotFound) }
