// Package egress is the runner's end of the egress tunnel: it holds the
// gateway's egress session and opens one stream on it for every
// connection the sandbox's proxy accepts. It decides nothing: policy, DNS
// and dialling are the gateway's (see protocol.EgressOpen).
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/proxy"
)

// verdictTimeout bounds how long a connection waits for the gateway's
// verdict; the gateway resolves and dials before it answers.
const verdictTimeout = 30 * time.Second

// sessionWait is how long a connection waits for the gateway's egress
// session when none is attached. The gateway attaches one as soon as it
// connects to the runner, but a command of the very first call can dial
// before that session is up; it waits rather than being refused.
var sessionWait = 5 * time.Second

// Link is the sandbox's way out. It is a proxy.Opener; with no gateway
// attached within sessionWait a connection is refused, so egress fails
// closed.
type Link struct {
	mu   sync.Mutex
	sess *yamux.Session
	up   chan struct{} // closed when a session is attached; nil while nobody waits
}

// Serve runs the gateway's egress session over conn until it ends. A new
// session replaces the previous one (a reconnecting gateway); connections
// already open on the old one keep going until it closes.
func (l *Link) Serve(conn net.Conn) error {
	sess, err := yamux.Server(conn, protocol.YamuxConfig())
	if err != nil {
		conn.Close()
		return fmt.Errorf("start egress session: %w", err)
	}
	l.mu.Lock()
	old := l.sess
	l.sess = sess
	if l.up != nil {
		close(l.up)
		l.up = nil
	}
	l.mu.Unlock()
	if old != nil {
		// Only one gateway owns a sandbox; an older session is stale.
		_ = old.Close()
	}
	<-sess.CloseChan()
	l.mu.Lock()
	if l.sess == sess {
		l.sess = nil
	}
	l.mu.Unlock()
	return nil
}

// session returns the attached session, waiting up to sessionWait (and
// no longer than ctx) for one; nil when none came.
func (l *Link) session(ctx context.Context) *yamux.Session {
	timer := time.NewTimer(sessionWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		sess := l.sess
		if sess == nil && l.up == nil {
			l.up = make(chan struct{})
		}
		up := l.up
		l.mu.Unlock()
		if sess != nil {
			return sess
		}
		select {
		case <-up:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Open asks the gateway for a connection to dest and returns the stream
// that carries it, or a *proxy.Refusal with the gateway's reason.
func (l *Link) Open(ctx context.Context, dest proxy.Dest) (net.Conn, error) {
	sess := l.session(ctx)
	if sess == nil {
		return nil, &proxy.Refusal{Status: http.StatusServiceUnavailable, Reason: fmt.Sprintf("%s: egress unavailable: the gateway is not connected to this sandbox; retry in a moment", hostPort(dest))}
	}
	stream, err := sess.OpenStream()
	if err != nil {
		return nil, &proxy.Refusal{Status: http.StatusServiceUnavailable, Reason: fmt.Sprintf("%s: egress unavailable: %v", hostPort(dest), err)}
	}
	verdict, err := ask(ctx, stream, dest)
	if err != nil {
		stream.Close()
		return nil, &proxy.Refusal{Status: http.StatusBadGateway, Reason: fmt.Sprintf("%s: no answer from the gateway: %v", hostPort(dest), err)}
	}
	if !verdict.Allowed() {
		stream.Close()
		return nil, &proxy.Refusal{Status: verdict.Status, Reason: verdict.Reason}
	}
	return halfCloser{stream}, nil
}

// halfCloser gives a yamux stream the CloseWrite a relay looks for:
// yamux's Close sends FIN, and the stream stays readable until the
// gateway's.
type halfCloser struct{ *yamux.Stream }

func (h halfCloser) CloseWrite() error { return h.Stream.Close() }

// ask sends the request and waits for the verdict, bounded by ctx and
// verdictTimeout.
func ask(ctx context.Context, stream *yamux.Stream, dest proxy.Dest) (protocol.EgressVerdict, error) {
	var v protocol.EgressVerdict
	deadline := time.Now().Add(verdictTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = stream.SetDeadline(deadline)
	defer stream.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = stream.SetDeadline(time.Now()) })
	defer stop()
	if err := protocol.WriteEgressFrame(stream, protocol.EgressOpen{Kind: string(dest.Kind), Host: dest.Host, Port: dest.Port}); err != nil {
		return v, err
	}
	if err := protocol.ReadEgressFrame(stream, &v); err != nil {
		return v, err
	}
	if v.Status == 0 {
		return v, errors.New("empty verdict")
	}
	return v, nil
}

func hostPort(d proxy.Dest) string {
	return net.JoinHostPort(d.Host, fmt.Sprint(d.Port))
}
