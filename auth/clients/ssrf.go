package clients

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
)

// ErrForbiddenAddress is wrapped (together with
// auth.ErrInvalidClientMetadata) by every refusal to reach an address that
// is not on the public internet: loopback, private, link-local, cloud
// metadata, multicast and the like.
var ErrForbiddenAddress = errors.New("forbidden address")

// forbidden lists the address blocks a metadata document fetch must never
// reach, with the words the error uses. IPv4-mapped IPv6 addresses are
// unmapped before the lookup, and the IPv4 address inside NAT64 and 6to4
// addresses is checked on its own (see forbiddenReason), so each IPv4 rule
// covers those spellings too. The first matching prefix names the reason.
var forbidden = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified, this network"},
	{netip.MustParsePrefix("10.0.0.0/8"), "RFC 1918 private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, cloud metadata"},
	{netip.MustParsePrefix("172.16.0.0/12"), "RFC 1918 private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.168.0.0/16"), "RFC 1918 private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	// ::a.b.c.d, deprecated IPv4-compatible addresses, and the rest of
	// ::/8, where nothing public lives (64:ff9b::/96 is in it, but NAT64
	// addresses are judged by their IPv4 address before this table).
	{netip.MustParsePrefix("::/8"), "IPv4-compatible reserved"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo tunnel"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "unique local private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// forbiddenReason says why addr must not be reached, or "" when it is a
// public address.
func forbiddenReason(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid"
	}
	if addr.Zone() != "" {
		return "scoped (has a zone)"
	}
	addr = addr.Unmap()
	// A NAT64 or 6to4 address reaches the IPv4 address it carries, so
	// that address decides.
	if nat64.Contains(addr) {
		b := addr.As16()
		return embeddedReason("NAT64", netip.AddrFrom4([4]byte(b[12:16])))
	}
	if sixToFour.Contains(addr) {
		b := addr.As16()
		return embeddedReason("6to4", netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, f := range forbidden {
		if f.prefix.Contains(addr) {
			return f.reason + ", " + f.prefix.String()
		}
	}
	return ""
}

func embeddedReason(kind string, v4 netip.Addr) string {
	if r := forbiddenReason(v4); r != "" {
		return kind + " form of " + v4.String() + ": " + r
	}
	return ""
}

// refusal says why addr must not be reached, or "" when it may be: it is
// public, or loopback in dev mode.
func refusal(addr netip.Addr, allowLoopback bool) string {
	if allowLoopback && addr.Zone() == "" && addr.Unmap().IsLoopback() {
		return ""
	}
	return forbiddenReason(addr)
}

// dialControl is the net.Dialer.Control hook: it sees the address
// actually being connected to, after the dialer's own DNS lookup, so a
// name that resolved to a public address for checkResolved and to a
// private one now (DNS rebinding) is still refused before connect(2).
func dialControl(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if network != "tcp4" && network != "tcp6" {
			return forbiddenf("connect-time check: network %s is not TCP", network)
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return forbiddenf("connect-time check: cannot parse address %q", address)
		}
		if reason := refusal(ap.Addr(), allowLoopback); reason != "" {
			return forbiddenf("connect-time check: %s is not a public address (%s)", ap.Addr(), reason)
		}
		return nil
	}
}

// checkResolved resolves host and refuses it if any address is forbidden,
// not only all of them, so that the outcome cannot depend on which address
// the dialer happens to try. This check gives a clear error before
// anything is sent; dialControl is what makes the guarantee.
func checkResolved(ctx context.Context, r *net.Resolver, host string, allowLoopback bool) error {
	addrs, err := lookup(ctx, r, host)
	if err != nil {
		return invalidf("resolve host %s: %v", host, err)
	}
	for _, a := range addrs {
		if reason := refusal(a, allowLoopback); reason != "" {
			return forbiddenf("host %s resolves to %s, which is not a public address (%s)", host, a, reason)
		}
	}
	return nil
}

func lookup(ctx context.Context, r *net.Resolver, host string) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{addr}, nil // dev mode's 127.0.0.1 and ::1
	}
	return r.LookupNetIP(ctx, "ip", host)
}
