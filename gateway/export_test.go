package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// DropConnections closes every runner connection (and with them the
// egress sessions) and stops the background work (sweeps, the warm pool's
// refill) without touching the sandboxes, as the death of the gateway's
// process would. Tests that simulate a crash use it.
func (g *Server) DropConnections() {
	g.stop()
	for _, b := range g.boxes.matching(func(*box) bool { return true }) {
		b.mu.Lock()
		b.dropClient()
		b.mu.Unlock()
	}
}

// Sweep runs the idle and lifetime sweep once, as of now.
func (g *Server) Sweep(now time.Time) {
	g.boxes.sweep(context.Background(), now, g.sessions.end)
}

// Reconcile runs the timer's reconciliation once, as of now.
func (g *Server) Reconcile(now time.Time) {
	g.boxes.reconcileTracked(context.Background(), now)
}

// TendPool runs one round of a replicated gateway's care of its ready
// sandboxes (pool.tend) as if it were now.
func (g *Server) TendPool(now time.Time) { g.boxes.pool.tendOnce(context.Background(), now) }

// SetTouchEvery sets how often a replicated gateway records a box's use
// (IdleTTL/8 by default), so tests need not wait for the throttle.
func (g *Server) SetTouchEvery(d time.Duration) { g.boxes.touchEvery = d }

// Tracks reports whether the gateway tracks sandbox id.
func (g *Server) Tracks(id string) bool {
	g.boxes.mu.Lock()
	defer g.boxes.mu.Unlock()
	return g.boxes.byID[id] != nil
}

// Admit runs a replicated gateway's quota check after the creation of
// sandbox id, under limit, as if another replica's creation had raced it.
func (g *Server) Admit(ctx context.Context, id string, limit int) error {
	g.boxes.mu.Lock()
	b := g.boxes.byID[id]
	g.boxes.mu.Unlock()
	g.boxes.cfg.MaxSandboxesPerTenant = limit
	return g.boxes.admit(ctx, b, LocalPrincipal)
}

// RaceDefault makes a default sandbox for the local principal's client
// name on this replicated gateway, as if its creation had raced
// another replica's, and returns the default it then keeps.
func (g *Server) RaceDefault(ctx context.Context, name string) (string, error) {
	m, p := g.boxes, LocalPrincipal
	key := clientKey(p, name)
	b, err := m.createBox(ctx, p, newSandbox{client: key, image: m.cfg.Image, allow: m.defaultAllow(p.Tenant)})
	if err != nil {
		return "", err
	}
	if b, _, err = m.keepOldest(ctx, p, key, b); err != nil {
		return "", err
	}
	return b.id(), nil
}

// ReadBothWays reads req in sandbox id as read_file can: from the host
// (sandbox.HostFiles; hostErr when the host declines) and from the
// runner, so a test can hold the two answers side by side.
func (g *Server) ReadBothWays(ctx context.Context, id string, req protocol.ReadRequest) (host protocol.ReadResult, hostErr error, runner protocol.ReadResult, runnerErr error) {
	g.boxes.mu.Lock()
	b := g.boxes.byID[id]
	g.boxes.mu.Unlock()
	if b == nil {
		err := fmt.Errorf("sandbox %s is not tracked", id)
		return host, err, runner, err
	}
	hostErr = errors.ErrUnsupported
	if hf, ok := b.sandbox().(sandbox.HostFiles); ok {
		host, hostErr = hostFiles.ReadVia(ctx, req, hf.OpenHostFile)
	}
	rc, err := b.connect(ctx)
	if err != nil {
		return host, hostErr, runner, err
	}
	runnerErr = rc.Call(ctx, protocol.OpFileRead, req, &runner)
	return host, hostErr, runner, runnerErr
}

// WatchSubscribers returns how many subscribers (legacy sessions and
// subscriptions/listen streams) the watch of sandbox id has.
func (g *Server) WatchSubscribers(id string) int {
	g.watches.mu.Lock()
	defer g.watches.mu.Unlock()
	if w := g.watches.by[id]; w != nil {
		return len(w.subs)
	}
	return 0
}
