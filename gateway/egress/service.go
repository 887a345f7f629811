package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/gateway/egress/guard"
	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// Resolver looks up a host's addresses. *net.Resolver is one; tests map
// names to servers of their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configure a Service.
type Options struct {
	// Guard refuses the addresses no policy may reach; required.
	Guard *guard.Guard
	// Resolver resolves destination names; nil means net.DefaultResolver.
	Resolver Resolver
	// Ceiling returns what a tenant's sandboxes may be allowed at most;
	// a connection needs both its sandbox's allowlist and this. Nil
	// allows nothing.
	Ceiling func(tenant string) policy.Rules
	// Record receives one Record per connection, refused or ended. It
	// must not block for long: it runs on the connection's goroutine.
	Record func(Record)
	Log    *slog.Logger
	// Testing holds allowances that only tests may set.
	Testing *Testing
}

// Testing lets a test reach servers it started on loopback, which no
// configuration can: cmd/gateway never sets it, and the loopback refusal
// itself stays tested for every other port.
type Testing struct {
	// Loopback maps ports of 127.0.0.1 and ::1 that may be dialled to
	// the ports test servers really listen on (443 → an httptest TLS
	// server's port), so sandboxes use the real ports of their URLs.
	Loopback map[uint16]uint16
}

// testPort returns the port to dial for ip:port under the test
// allowance, and whether there is one. Only plain loopback addresses
// qualify: an IPv4-mapped form stays refused, as in production.
func (t *Testing) testPort(ip netip.Addr, port uint16) (uint16, bool) {
	if t == nil || !isPlainLoopback(ip) {
		return 0, false
	}
	real, ok := t.Loopback[port]
	return real, ok
}

func isPlainLoopback(ip netip.Addr) bool {
	return ip.Is4() && ip.IsLoopback() || ip == netip.IPv6Loopback()
}

// Service serves the egress sessions of every sandbox of a gateway.
type Service struct {
	opts   Options
	dialer net.Dialer
}

// maxAddrsTried bounds how many of a name's addresses one connection
// tries, so a name with hundreds of records cannot stretch a dial.
const maxAddrsTried = 4

// NewService returns a Service.
func NewService(opts Options) *Service {
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Ceiling == nil {
		opts.Ceiling = func(string) policy.Rules { return nil }
	}
	if opts.Record == nil {
		opts.Record = func(Record) {}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts}
	// The dial-time check: whatever resolved to what, the address the
	// socket is about to connect to is checked once more.
	s.dialer.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if s.isTestTarget(ap) {
			return nil
		}
		return s.opts.Guard.Check(ap.Addr())
	}
	return s
}

// Ceiling returns tenant's ceiling.
func (s *Service) Ceiling(tenant string) policy.Rules { return s.opts.Ceiling(tenant) }

// Serve accepts the streams the runner opens on sess, one per proxied
// connection, until sess closes or ctx ends (which closes sess).
func (s *Service) Serve(ctx context.Context, sess *yamux.Session, g *Gate) {
	stop := context.AfterFunc(ctx, func() { _ = sess.Close() })
	defer stop()
	defer s.flushUnrecorded(g)
	for {
		st, err := sess.AcceptStream()
		if err != nil {
			return
		}
		go s.handle(ctx, st, g)
	}
}

// flushUnrecorded writes the record of connections refused over the rate
// limit that no later record has counted.
func (s *Service) flushUnrecorded(g *Gate) {
	if n := g.unrecorded.Swap(0); n > 0 {
		s.opts.Record(Record{SandboxID: g.SandboxID, Tenant: g.Tenant, Principal: g.Principal, Start: time.Now(),
			Status: http.StatusTooManyRequests, Unrecorded: n,
			Refused: fmt.Sprintf("%d connections refused over the limit of %d a minute", n, g.limits.ConnsPerMinute)})
	}
}

// checkResolved is guard.Check for an address a name resolved to, with
// the test allowance for loopback ports. Address literals get no
// allowance: a test's "127.0.0.1" is refused as it is in production.
func (s *Service) checkResolved(ip netip.Addr, port uint16) error {
	if _, ok := s.opts.Testing.testPort(ip, port); ok {
		return nil
	}
	return s.opts.Guard.Check(ip)
}

// isTestTarget reports whether ap is one of the test servers the test
// allowance maps to.
func (s *Service) isTestTarget(ap netip.AddrPort) bool {
	t := s.opts.Testing
	if t == nil || !isPlainLoopback(ap.Addr()) {
		return false
	}
	for _, real := range t.Loopback {
		if real == ap.Port() {
			return true
		}
	}
	return false
}

// dialAddr is where to connect for ip:port: itself, unless the test
// allowance maps it to a test server.
func (s *Service) dialAddr(ip netip.Addr, port uint16) string {
	if real, ok := s.opts.Testing.testPort(ip, port); ok {
		port = real
	}
	return netip.AddrPortFrom(ip, port).String()
}
