package gateway

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

// serveEgress runs the box's egress session beside runner connection c:
// the runner forwards its proxy's connections on it, and the gateway
// decides and dials them (package egress). It lives as long as c does;
// the next connection brings the next session.
func (b *box) serveEgress(svc *egress.Service, c *protocol.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		sess, err := protocol.DialEgress(ctx, func(ctx context.Context) (net.Conn, error) { return b.sandbox().Dial(ctx) })
		if err == nil {
			svc.Serve(ctx, sess, b.gate)
		}
		select {
		case <-ctx.Done():
		case <-time.After(egressRedial):
		}
	}
}
