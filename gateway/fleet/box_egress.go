package fleet

import (
	"context"
	"net"
	"time"

	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/runner/protocol"
)

// egressRedial is how long to wait before dialling a lost egress session
// again while the runner connection it belongs to is still up.
const egressRedial = time.Second

// egressRun is one run of serveEgress, for runner connection c.
type egressRun struct {
	c      *protocol.Client
	cancel context.CancelFunc
}

// startEgress starts the egress session of runner connection c unless
// one runs for it already; b.mu must be held.
func (b *Box) startEgress(c *protocol.Client) {
	if b.egress == nil || b.egressRun != nil && b.egressRun.c == c {
		return
	}
	b.runEgress(c, nil)
}

// runEgress starts a run of serveEgress for c, which reports on ready
// (if not nil) whether its first session came up; b.mu must be held.
func (b *Box) runEgress(c *protocol.Client, ready chan<- error) {
	ctx, cancel := context.WithCancel(context.Background())
	run := &egressRun{c: c, cancel: cancel}
	b.egressRun = run
	go b.serveEgress(ctx, b.egress, run, ready)
}

// takeEgress makes a new egress session of this gateway the runner's
// current one, closing the one before (whichever replica held it, with
// its connections), and returns once it serves, with the allowlist read
// from the record after the runner switched (see serveEgress). A
// replicated gateway calls it after it narrowed the allowlist. Without a
// runner connection it does nothing: whoever connects next reads the
// record first.
func (b *Box) takeEgress(ctx context.Context) error {
	b.Mu.Lock()
	c := b.Client
	if b.egress == nil || c == nil || c.Err() != nil {
		b.Mu.Unlock()
		return nil
	}
	if old := b.egressRun; old != nil {
		old.cancel()
	}
	ready := make(chan error, 1)
	b.runEgress(c, ready)
	b.Mu.Unlock()
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serveEgress runs the box's egress session beside runner connection
// run.c: the runner forwards its proxy's connections on it, and the
// gateway decides and dials them (package egress). It lives as long as
// run.c does (or until the run is cancelled); in a gateway that is the
// only one, the next connection brings the next session.
//
// The runner keeps one egress session, the newest: a gateway that dials
// one closes the one before, with its connections. So when two gateway
// replicas hold connections to one runner, the one whose session is the
// newest decides every new connection. A replicated gateway therefore
// does not dial again when its session ends while run.c lives (another
// replica took it over; redialling would take it back every
// egressRedial, each time cutting the other's connections): it takes it
// back on its own next use of the sandbox (connect). Before it serves a
// session, and after the runner switched to it, it reads the allowlist
// from the record (beforeEgress): connections the runner opens meanwhile
// wait in the session's backlog, so this gateway never decides one with
// a list that another replica had narrowed before this session became
// the runner's. If the read fails, the session is closed: fail closed.
func (b *Box) serveEgress(ctx context.Context, svc *egress.Service, run *egressRun, ready chan<- error) {
	defer func() {
		b.Mu.Lock()
		if b.egressRun == run {
			b.egressRun = nil
		}
		b.Mu.Unlock()
		run.cancel()
	}()
	go func() {
		select {
		case <-run.c.Done():
			run.cancel()
		case <-ctx.Done():
		}
	}()
	report := func(err error) {
		if ready != nil {
			ready <- err
			ready = nil
		}
	}
	defer func() { report(ctx.Err()) }()
	for ctx.Err() == nil {
		sess, err := protocol.DialEgress(ctx, func(ctx context.Context) (net.Conn, error) { return b.Sandbox().Dial(ctx) })
		if err == nil && b.beforeEgress != nil {
			if err = b.beforeEgress(ctx); err != nil {
				_ = sess.Close()
			}
		}
		report(err)
		if err == nil {
			svc.Serve(ctx, sess, b.Gate)
		}
		if b.beforeEgress != nil {
			return // replicated: see above
		}
		select {
		case <-ctx.Done():
		case <-time.After(egressRedial):
		}
	}
}
