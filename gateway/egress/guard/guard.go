package guard

import (
	"fmt"
	"net"
	"net/netip"
)

// Refusal says why an address may never be dialled.
type Refusal struct {
	IP     netip.Addr
	Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s is %s; sandboxes may never reach it", r.IP, r.Reason)
}

// forbidden is every range refused whatever a policy says, with the
// reason a refusal gives. It is the list to audit: anything not in it
// (and not one of the host's own addresses) is public unicast.
var forbidden = []struct {
	prefix netip.Prefix
	reason string
}{
	{pfx("0.0.0.0/8"), "unspecified (\"this network\")"},
	{pfx("10.0.0.0/8"), "private (RFC 1918)"},
	{pfx("100.64.0.0/10"), "carrier-grade NAT (RFC 6598)"},
	{pfx("127.0.0.0/8"), "loopback"},
	{pfx("169.254.0.0/16"), "link-local (cloud metadata)"},
	{pfx("172.16.0.0/12"), "private (RFC 1918)"},
	{pfx("192.0.0.0/24"), "reserved (IETF protocol assignments)"},
	{pfx("192.0.2.0/24"), "documentation (TEST-NET-1)"},
	{pfx("192.88.99.0/24"), "reserved (6to4 relay anycast)"},
	{pfx("192.168.0.0/16"), "private (RFC 1918)"},
	{pfx("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{pfx("198.51.100.0/24"), "documentation (TEST-NET-2)"},
	{pfx("203.0.113.0/24"), "documentation (TEST-NET-3)"},
	{pfx("224.0.0.0/4"), "multicast"},
	{pfx("240.0.0.0/4"), "reserved (class E and broadcast)"},

	{pfx("::/128"), "unspecified"},
	{pfx("::1/128"), "loopback"},
	{pfx("::ffff:0:0/96"), "IPv4-mapped IPv6"},
	{pfx("::/96"), "IPv4-compatible IPv6 (deprecated)"},
	{pfx("64:ff9b::/96"), "NAT64"},
	{pfx("64:ff9b:1::/48"), "NAT64 (local use)"},
	{pfx("100::/64"), "discard-only"},
	{pfx("2001::/32"), "Teredo"},
	{pfx("2001::/23"), "reserved (IETF protocol assignments)"},
	{pfx("2001:db8::/32"), "documentation"},
	{pfx("2002::/16"), "6to4"},
	{pfx("3fff::/20"), "documentation"},
	{pfx("fc00::/7"), "IPv6 unique local (private)"},
	{pfx("fe80::/10"), "link-local"},
	{pfx("fec0::/10"), "site-local (deprecated)"},
	{pfx("ff00::/8"), "multicast"},
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// ownReason is the reason for the host's own addresses.
const ownReason = "this host's own address"

// Guard classifies addresses.
type Guard struct {
	own []netip.Prefix
}

// New returns a Guard that refuses, besides the fixed table, the given
// addresses and networks (the host's own, container bridges).
func New(own []netip.Prefix) *Guard {
	return &Guard{own: append([]netip.Prefix(nil), own...)}
}

// Check returns nil when ip may be dialled, or a *Refusal.
func (g *Guard) Check(ip netip.Addr) error {
	if !ip.IsValid() {
		return &Refusal{IP: ip, Reason: "not an address"}
	}
	if ip.Zone() != "" {
		return &Refusal{IP: ip, Reason: "an address with a zone"}
	}
	if reason, ok := fixedReason(ip); ok {
		return &Refusal{IP: ip, Reason: reason}
	}
	for _, p := range g.own {
		if p.Contains(ip) {
			return &Refusal{IP: ip, Reason: ownReason}
		}
	}
	return nil
}

// fixedReason looks ip up in the fixed table. The most specific match
// wins, so 2001:db8::1 is documentation rather than the IETF block.
func fixedReason(ip netip.Addr) (string, bool) {
	best, reason := -1, ""
	for _, f := range forbidden {
		if f.prefix.Contains(ip) && f.prefix.Bits() > best {
			best, reason = f.prefix.Bits(), f.reason
		}
	}
	return reason, best >= 0
}

// AlwaysRefused reports whether any address of p is in the fixed table,
// with the reason of the first such range, so a policy cannot name what
// would always be refused.
func AlwaysRefused(p netip.Prefix) (string, bool) {
	p = p.Masked()
	for _, f := range forbidden {
		if f.prefix.Overlaps(p) {
			return f.prefix.String() + " is " + f.reason, true
		}
	}
	return "", false
}

// HostPrefixes lists this machine's interface addresses, each as a
// single-address prefix. Their networks are not included: on a host with
// a public address, its neighbours are ordinary destinations (bridges
// and private networks are refused by the fixed table anyway).
func HostPrefixes() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list interface addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}
