package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// box is one live sandbox as the gateway sees it: the provider's handle,
// who owns it, and the one persistent runner connection every call shares.
type box struct {
	sb      sandbox.Sandbox
	owner   string // Principal.Digest of the owner
	tenant  string // the owner's tenant, for quotas ("" for adopted boxes)
	session string // legacy MCP session that owns it, or ""
	expires time.Time

	lastUsed atomic.Int64 // unix nanoseconds
	inUse    atomic.Int32 // calls in flight; the idle sweeper leaves busy boxes alone

	mu     sync.Mutex
	client *protocol.Client
	gone   bool // destroyed; no new calls
}

func (b *box) id() string { return b.sb.ID() }

// acquire marks a call in flight and returns the runner connection,
// dialling a new one if there is none or the old one broke (the runner
// survives a lost connection, so a redial finds its background processes).
// The caller must call release.
func (b *box) acquire(ctx context.Context) (*protocol.Client, error) {
	b.inUse.Add(1)
	b.touch()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return nil, errSandboxGone
	}
	if b.client != nil && b.client.Err() == nil {
		return b.client, nil
	}
	c, err := protocol.Dial(ctx, b.sb.Dial)
	if err != nil {
		return nil, err
	}
	b.client = c
	return c, nil
}

func (b *box) release() {
	b.touch()
	b.inUse.Add(-1)
}

func (b *box) touch() { b.lastUsed.Store(time.Now().UnixNano()) }

// idleSince reports how long the box has been unused; busy boxes are never idle.
func (b *box) idleSince(now time.Time) time.Duration {
	if b.inUse.Load() > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, b.lastUsed.Load()))
}

// markGone stops new calls and closes the connection.
func (b *box) markGone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gone = true
	if b.client != nil {
		_ = b.client.Close()
		b.client = nil
	}
}
