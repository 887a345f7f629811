package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"
)

// dial resolves t (unless it is an address) and connects to the first
// address that may be dialled. Every address is checked right before its
// dial, and again by the dialer's Control on the socket itself, so what
// the name resolved to earlier, or to whom else, does not matter.
func (s *Service) dial(ctx context.Context, t target, timeout time.Duration) (net.Conn, netip.Addr, string, *refusal) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs := []netip.Addr{t.host.IP}
	if !t.host.IP.IsValid() {
		var err error
		addrs, err = s.opts.Resolver.LookupNetIP(ctx, "ip", t.host.Name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, netip.Addr{}, "", refuse(http.StatusGatewayTimeout, t.addr(), "resolving the name timed out")
			}
			return nil, netip.Addr{}, "", refuse(http.StatusBadGateway, t.addr(), "the name does not resolve: %v", dnsReason(err))
		}
	}
	var refused, failed error
	tried := 0
	for _, ip := range addrs {
		if tried == maxAddrsTried {
			break
		}
		check := s.opts.Guard.Check(ip)
		if !t.host.IP.IsValid() {
			check = s.checkResolved(ip, t.port)
		}
		if err := check; err != nil {
			refused = err
			continue
		}
		rule := t.rule
		if t.addrOK != nil {
			r, ok := t.addrOK(ip)
			if !ok {
				refused = fmt.Errorf("it resolves to %s, outside the allowed networks", ip)
				continue
			}
			rule = r
		}
		tried++
		conn, err := s.dialer.DialContext(ctx, "tcp", s.dialAddr(ip, t.port))
		if err == nil {
			return conn, ip, rule, nil
		}
		failed = err
	}
	switch {
	case failed != nil && ctx.Err() != nil:
		return nil, netip.Addr{}, "", refuse(http.StatusGatewayTimeout, t.addr(), "connecting timed out")
	case failed != nil:
		return nil, netip.Addr{}, "", refuse(http.StatusBadGateway, t.addr(), "could not connect: %v", connectReason(failed))
	case refused != nil:
		return nil, netip.Addr{}, "", refuse(http.StatusForbidden, t.addr(), "%v", refused)
	}
	return nil, netip.Addr{}, "", refuse(http.StatusBadGateway, t.addr(), "the name has no addresses")
}

// dnsReason keeps a resolver error short: no resolver address or search
// domain of the gateway's host leaks into the sandbox.
func dnsReason(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		switch {
		case de.IsNotFound:
			return "no such host"
		case de.IsTimeout:
			return "lookup timed out"
		}
		return "lookup failed"
	}
	return "lookup failed"
}

// connectReason is the part of a dial error that helps, without the
// gateway's own addresses.
func connectReason(err error) string {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err.Error()
	}
	return err.Error()
}
