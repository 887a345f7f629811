package runner

import (
	"context"
	"net"
	"sync"
	"time"
)

// Gate is the runner's listener, which a memory checkpoint can close and
// open again.
//
// gVisor (runsc) checkpoints a sandbox's whole memory, but it cannot save
// a socket bound to, or connected through, a host path (the runner's unix
// socket in the bind-mounted socket dir: "Cannot save endpoint with bound
// host socket"). So before a checkpoint the gateway asks the runner to let
// go of every such socket (protocol.OpCheckpointPrepare): the Gate closes
// its listener and every connection it accepted, and Accept blocks, so
// the http.Server above it keeps running. After the restore the gateway
// signals the runner (SIGUSR2, forwarded by the container's init) and the
// Gate binds again.
//
// A Gate suspended for longer than its fallback binds again by itself: the
// gateway may have died between asking and checkpointing.
//
// The background processes, the interpreter and the browser belong to the
// runner, not to a connection, so they are all in the checkpoint.
type Gate struct {
	listen   func() (net.Listener, error)
	fallback time.Duration

	mu     sync.Mutex
	ln     net.Listener  // nil while suspended
	open   chan struct{} // closed when ln is set again
	conns  map[net.Conn]struct{}
	timer  *time.Timer // the fallback Reopen while suspended
	closed bool
}

// NewGate binds with listen and returns the Gate serving on it; fallback
// is how long a suspension lasts at most.
func NewGate(listen func() (net.Listener, error), fallback time.Duration) (*Gate, error) {
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	return &Gate{listen: listen, fallback: fallback, ln: ln, conns: map[net.Conn]struct{}{}}, nil
}

// Accept waits for the next connection, across a suspension.
func (g *Gate) Accept() (net.Conn, error) {
	for {
		g.mu.Lock()
		ln, open, closed := g.ln, g.open, g.closed
		g.mu.Unlock()
		if closed {
			return nil, net.ErrClosed
		}
		if ln == nil {
			<-open
			continue
		}
		c, err := ln.Accept()
		if err != nil {
			g.mu.Lock()
			suspended := g.ln != ln
			g.mu.Unlock()
			if suspended {
				continue // Suspend closed it under us
			}
			return nil, err
		}
		g.mu.Lock()
		if g.ln != ln {
			g.mu.Unlock()
			c.Close() // accepted just as the Gate was suspended
			continue
		}
		tc := &gateConn{Conn: c, g: g}
		g.conns[tc] = struct{}{}
		g.mu.Unlock()
		return tc, nil
	}
}

// Close stops the Gate for good.
func (g *Gate) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var err error
	if g.ln != nil {
		err = g.ln.Close()
		g.ln = nil
	} else {
		g.timer.Stop()
		close(g.open)
	}
	return err
}

// Addr is the address the Gate was bound to.
func (g *Gate) Addr() net.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		return &net.UnixAddr{Net: "unix"}
	}
	return g.ln.Addr()
}

// Suspend closes the listener and every accepted connection except keep,
// the one the gateway asked on (its caller closes it once the answer is
// written). Suspending a suspended Gate does nothing.
func (g *Gate) Suspend(keep net.Conn) {
	g.mu.Lock()
	if g.ln == nil || g.closed {
		g.mu.Unlock()
		return
	}
	_ = g.ln.Close()
	g.ln, g.open = nil, make(chan struct{})
	g.timer = time.AfterFunc(g.fallback, g.reopenLater)
	var others []net.Conn
	for c := range g.conns {
		if c != keep {
			others = append(others, c)
		}
	}
	g.mu.Unlock()
	for _, c := range others {
		_ = c.Close() // takes g.mu to untrack itself
	}
}

// Reopen binds again after a Suspend; it does nothing on a Gate that
// listens. A failed bind leaves the Gate suspended, to be tried again.
func (g *Gate) Reopen() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil || g.closed {
		return nil
	}
	ln, err := g.listen()
	if err != nil {
		return err
	}
	g.ln = ln
	g.timer.Stop()
	close(g.open)
	return nil
}

// reopenLater is the fallback: it binds, or tries again a fallback later.
func (g *Gate) reopenLater() {
	if err := g.Reopen(); err != nil {
		g.mu.Lock()
		if g.ln == nil && !g.closed {
			g.timer = time.AfterFunc(g.fallback, g.reopenLater)
		}
		g.mu.Unlock()
	}
}

// Suspended reports whether the Gate is closed for a checkpoint.
func (g *Gate) Suspended() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ln == nil && !g.closed
}

// ConnContext is the http.Server's ConnContext: it gives each request's
// context the connection it came on, so the checkpoint operation can keep
// its own until its answer is written.
func (g *Gate) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

type connKey struct{}

// connOf returns the connection ctx's request came on, or nil.
func connOf(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	return c
}

// gateConn is an accepted connection the Gate tracks until it closes.
type gateConn struct {
	net.Conn
	g    *Gate
	once sync.Once
}

func (c *gateConn) Close() error {
	c.once.Do(func() {
		c.g.mu.Lock()
		delete(c.g.conns, c)
		c.g.mu.Unlock()
	})
	return c.Conn.Close()
}
