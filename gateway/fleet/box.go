package fleet

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Box is one live sandbox as the gateway sees it: the provider's handle,
// who owns it, and the one persistent runner connection every call shares.
type Box struct {
	sandboxID string
	Owner     string // identity.Identity.Digest of the owner
	Tenant    string // the owner's tenant, for quotas ("" for adopted boxes)
	Session   string // legacy MCP session that owns it, or ""
	clientKey string // ClientKey of the client whose default it is, or "" (defaultbox.go)
	// expires is its maximum lifetime's end (unix nanoseconds): a
	// resume starts a new run, which gets a whole lifetime (pause.go).
	expires atomic.Int64
	// Creator is who created it, for the audit records of calls that
	// reach it by an access token rather than a login (the E2B data
	// plane); adopted boxes know only the owner's digest.
	Creator identity.Identity
	// deadline, when not zero, is an earlier end (unix nanoseconds) its
	// owner set (the E2B API's timeout); see setDeadline and deadline.go.
	// deadlineWritten is when this replicated gateway last wrote it to
	// the record.
	deadline        atomic.Int64
	deadlineWritten atomic.Int64
	expiry          *time.Timer // runs at the deadline; guarded by mu

	lastUsed atomic.Int64 // unix nanoseconds
	inUse    atomic.Int32 // calls in flight; the idle sweeper leaves busy boxes alone

	// Replicated gateways only (replicas.go): onUse records a use in the
	// provider, throttled; recorded is the last use known to be there
	// (unix nanoseconds) and recording is true while a write is in
	// flight. beforeEgress brings the allowlist up to date from the
	// record before this gateway takes the runner's egress session.
	// netMu serialises allowlist changes and refreshes, and netWritten
	// is when this gateway's last change was written.
	onUse        func()
	recorded     atomic.Int64
	recording    atomic.Bool
	beforeEgress func(context.Context) error
	netMu        sync.Mutex
	netWritten   time.Time

	// replacing serialises replacements of a dead sandbox (see replace).
	replacing sync.Mutex

	// Gate is the sandbox's egress policy and counters; it outlives
	// connections and replaced containers. egress serves its sessions
	// (nil: no egress sessions, every proxied connection is refused by
	// the runner for want of a gateway).
	Gate    *egress.Gate
	egress  *egress.Service
	metrics *metrics.Metrics

	Mu     sync.Mutex
	sb     sandbox.Sandbox // the provider's handle; a replacement swaps it
	gen    int             // how many times sb was replaced
	Client *protocol.Client
	gone   bool // being destroyed or destroyed; no new calls
	// paused is true while the sandbox is paused or being paused
	// (pause.go); it changes under Mu, and is read without it where a
	// count will do (quotas, metrics). pausedAt is when it was paused
	// (zero when the provider cannot tell) and pausedBytes what it
	// takes on disk, for the paused quota.
	paused      atomic.Bool
	pausedAt    time.Time
	pausedFor   string // the pause's reason: who asked (see WaitsForResume)
	pausedBytes atomic.Int64
	// egressRun is the run of serveEgress going on, nil when none is.
	egressRun *egressRun
}

// newBox records a live sandbox.
func newBox(sb sandbox.Sandbox, owner, tenant, session string, expires time.Time) *Box {
	b := &Box{sandboxID: sb.ID(), sb: sb, Owner: owner, Tenant: tenant, Session: session, clientKey: sb.Info().Client}
	b.expires.Store(expires.UnixNano())
	b.touch()
	return b
}

// EndAt is when the sandbox is due for removal: its maximum lifetime's
// end, or the earlier deadline its owner set.
func (b *Box) EndAt() time.Time {
	e := b.expires.Load()
	if d := b.deadline.Load(); d != 0 && d < e {
		return time.Unix(0, d)
	}
	return time.Unix(0, e)
}

// lifetimeEnd is the end of its maximum lifetime.
func (b *Box) lifetimeEnd() time.Time { return time.Unix(0, b.expires.Load()) }

// SetDeadline makes the sandbox end at t (zero: at the end of its
// maximum lifetime), or at the end of its maximum lifetime if that is
// earlier, and runs expire then (the sweep would find it up to half a
// minute late, and E2B clients set timeouts of seconds). It returns when
// the sandbox will end. It only arms the timer: sandboxes.setDeadline
// keeps the deadline where a restarted gateway or a replica reads it.
func (b *Box) SetDeadline(t time.Time, expire func()) time.Time {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if b.expiry != nil {
		b.expiry.Stop()
		b.expiry = nil
	}
	if t.IsZero() {
		b.deadline.Store(0)
		return b.EndAt() // the sweep ends it at its maximum lifetime
	}
	b.deadline.Store(t.UnixNano())
	end := b.EndAt()
	b.expiry = time.AfterFunc(time.Until(end), expire)
	return end
}

// ID is the sandbox id; it never changes, not even when the sandbox's
// container is replaced.
func (b *Box) ID() string { return b.sandboxID }

// Info describes the sandbox's current container.
func (b *Box) Info() sandbox.Info {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return b.sb.Info()
}

// Generation reports how many times the sandbox was replaced; a call
// passes what it saw to replace, so concurrent calls that all found the
// same dead runner replace it once.
func (b *Box) Generation() int {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return b.gen
}

// Acquire marks a call in flight and returns the runner connection,
// dialling a new one if there is none or the old one broke (the runner
// survives a lost connection, so a redial finds its background processes).
// The caller must call release.
func (b *Box) Acquire(ctx context.Context) (*protocol.Client, error) {
	b.inUse.Add(1)
	b.touch()
	return b.Connect(ctx)
}

// Connect returns the runner connection, dialling a new one if there is
// none or the old one broke.
func (b *Box) Connect(ctx context.Context) (*protocol.Client, error) {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if b.gone {
		return nil, ErrSandboxGone
	}
	if b.paused.Load() {
		return nil, &connectError{err: fmt.Errorf("connect to sandbox %s: %w", b.ID(), errPaused), cause: errPaused}
	}
	if b.Client != nil && b.Client.Err() == nil {
		b.startEgress(b.Client) // a replica whose session another took takes it back
		return b.Client, nil
	}
	if b.Client != nil && b.metrics != nil {
		b.metrics.RunnerReconnects.Inc() // the last connection broke
	}
	// The provider's own dial error says whether the sandbox is gone
	// (sandbox.ErrNotFound); protocol.Dial keeps only its text, so it is
	// kept beside the protocol error for recoverDead.
	// A channel, not a variable: the dial may still run in the HTTP
	// transport's goroutine after Dial has given up on it.
	dialErr := make(chan error, 1)
	c, err := protocol.Dial(ctx, func(ctx context.Context) (net.Conn, error) {
		conn, err := b.sb.Dial(ctx)
		if err != nil {
			select {
			case dialErr <- err:
			default:
			}
		}
		return conn, err
	})
	if err != nil {
		ce := &connectError{err: err}
		select {
		case ce.cause = <-dialErr:
		default:
		}
		return nil, ce
	}
	b.Client = c
	b.startEgress(c)
	return c, nil
}

// Sandbox returns the provider's current handle.
func (b *Box) Sandbox() sandbox.Sandbox {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return b.sb
}

// connectError is a failed connection to a runner: the protocol's error,
// whose text the caller sees, and the provider's dial error behind it.
type connectError struct {
	err   error // from protocol.Dial
	cause error // from Sandbox.Dial; nil if the dial itself succeeded
}

func (e *connectError) Error() string   { return e.err.Error() }
func (e *connectError) Unwrap() []error { return []error{e.err, e.cause} }

func (b *Box) Release() {
	b.touch()
	b.inUse.Add(-1)
}

// touch records a use now.
func (b *Box) touch() {
	b.lastUsed.Store(time.Now().UnixNano())
	if b.onUse != nil {
		b.onUse()
	}
}

// idleSince reports how long the box has been unused; busy boxes are never idle.
func (b *Box) idleSince(now time.Time) time.Duration {
	if b.inUse.Load() > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, b.lastUsed.Load()))
}

// markGone stops new calls and closes the connection. It reports false
// if the box was already gone.
func (b *Box) markGone() bool {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if b.gone {
		return false
	}
	b.gone = true
	b.DropClient()
	return true
}

// DropClient closes the runner connection; b.mu must be held.
func (b *Box) DropClient() {
	if b.Client != nil {
		_ = b.Client.Close()
		b.Client = nil
	}
}

// IsGone reports whether the box is being or was destroyed.
func (b *Box) IsGone() bool {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return b.gone
}
