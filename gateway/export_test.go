package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// DropConnections closes every runner connection (and with them the
// egress sessions) and stops the background work (sweeps, the warm pool's
// refill) without touching the sandboxes, as the death of the gateway's
// process would. Tests that simulate a crash use it.
func (g *Server) DropConnections() {
	g.stop()
	g.boxes.DropClients()
}

// Sweep runs the idle and lifetime sweep once, as of now.
func (g *Server) Sweep(now time.Time) {
	g.sweep(context.Background(), now)
}

// Reconcile runs the timer's reconciliation once, as of now.
func (g *Server) Reconcile(now time.Time) {
	g.boxes.ReconcileTracked(context.Background(), now)
}

// TendPool runs one round of a replicated gateway's care of its ready
// sandboxes as if it were now.
func (g *Server) TendPool(now time.Time) { g.boxes.TendPoolOnce(context.Background(), now) }

// SetTouchEvery sets how often a replicated gateway records a box's use
// (IdleTTL/8 by default), so tests need not wait for the throttle.
func (g *Server) SetTouchEvery(d time.Duration) { g.boxes.SetTouchEvery(d) }

// Tracks reports whether the gateway tracks sandbox id.
func (g *Server) Tracks(id string) bool { return g.boxes.Tracked(id) != nil }

// Admit runs a replicated gateway's quota check after the creation of
// sandbox id, under limit, as if another replica's creation had raced it.
func (g *Server) Admit(ctx context.Context, id string, limit int) error {
	return g.boxes.AdmitUnder(ctx, id, LocalPrincipal, limit)
}

// RaceDefault makes a default sandbox for the local principal's client
// name on this replicated gateway, as if its creation had raced
// another replica's, and returns the default it then keeps.
func (g *Server) RaceDefault(ctx context.Context, name string) (string, error) {
	return g.boxes.RaceDefault(ctx, LocalPrincipal, name)
}

// ReadBothWays reads req in sandbox id as read_file can: from the host
// (sandbox.HostFiles; hostErr when the host declines) and from the
// runner, so a test can hold the two answers side by side.
func (g *Server) ReadBothWays(ctx context.Context, id string, req protocol.ReadRequest) (host protocol.ReadResult, hostErr error, runner protocol.ReadResult, runnerErr error) {
	b := g.boxes.Tracked(id)
	if b == nil {
		err := fmt.Errorf("sandbox %s is not tracked", id)
		return host, err, runner, err
	}
	hostErr = errors.ErrUnsupported
	if hf, ok := b.Sandbox().(sandbox.HostFiles); ok {
		host, hostErr = files.New(files.Options{Workspace: "/workspace"}).ReadVia(ctx, req, hf.OpenHostFile)
	}
	rc, err := b.Connect(ctx)
	if err != nil {
		return host, hostErr, runner, err
	}
	runnerErr = rc.Call(ctx, protocol.OpFileRead, req, &runner)
	return host, hostErr, runner, runnerErr
}

// WatchSubscribers returns how many subscribers (legacy sessions and
// subscriptions/listen streams) the watch of sandbox id has.
func (g *Server) WatchSubscribers(id string) int { return g.res.Watchers(id) }
