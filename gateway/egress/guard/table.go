package guard

import "net/netip"

// forbidden is every range Check refuses whatever a policy says, with
// the reason a refusal gives. It is the one list to audit: an address
// in none of these (nor one of the host's own) is public unicast. When
// ranges nest, the longest prefix gives the reason.
//
// The forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible,
// NAT64, 6to4, Teredo) are refused outright rather than judged by the
// address inside: a translator or the host's own stack may deliver them
// to that IPv4 address, and no allowlist needs them.
var forbidden = []struct {
	prefix netip.Prefix
	reason string
}{
	// IPv4 (RFC 6890 and the IANA special-purpose registry).
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
	{pfx("240.0.0.0/4"), "reserved (class E)"},
	{pfx("255.255.255.255/32"), "broadcast"},

	// IPv6: only 2000::/3 is global unicast; the rest of the space is
	// reserved or special, and the entries after these say how.
	{pfx("::/3"), "reserved (outside IPv6 global unicast 2000::/3)"},
	{pfx("4000::/2"), "reserved (outside IPv6 global unicast 2000::/3)"},
	{pfx("8000::/1"), "reserved (outside IPv6 global unicast 2000::/3)"},
	{pfx("::/128"), "unspecified"},
	{pfx("::1/128"), "loopback"},
	{pfx("::/96"), "IPv4-compatible IPv6 (deprecated)"},
	{pfx("::ffff:0:0/96"), "IPv4-mapped IPv6"},
	{pfx("::ffff:0:0:0/96"), "IPv4-translated IPv6 (SIIT)"},
	{pfx("64:ff9b::/96"), "NAT64"},
	{pfx("64:ff9b:1::/48"), "NAT64 (local use)"},
	{pfx("100::/64"), "discard-only"},
	{pfx("2001::/23"), "reserved (IETF protocol assignments)"},
	{pfx("2001::/32"), "Teredo"},
	{pfx("2001:10::/28"), "ORCHID (deprecated)"},
	{pfx("2001:20::/28"), "ORCHIDv2"},
	{pfx("2001:db8::/32"), "documentation"},
	{pfx("2002::/16"), "6to4"},
	{pfx("3fff::/20"), "documentation"},
	{pfx("fc00::/7"), "IPv6 unique local (private)"},
	{pfx("fe80::/10"), "link-local"},
	{pfx("fec0::/10"), "site-local (deprecated)"},
	{pfx("ff00::/8"), "multicast"},
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// fixedReason looks ip up in the fixed table; the most specific range
// wins, so 2001::1 is Teredo rather than the IETF block.
func fixedReason(ip netip.Addr) (string, bool) {
	best, reason := -1, ""
	for _, f := range forbidden {
		if f.prefix.Bits() > best && f.prefix.Contains(ip) {
			best, reason = f.prefix.Bits(), f.reason
		}
	}
	return reason, best >= 0
}

// AlwaysRefused reports whether any address of p lies in a range Check
// always refuses, and if so names that range and why ("10.0.0.0/8 is
// private (RFC 1918)"), so that a policy can refuse a rule that could
// never take effect. When p lies inside several ranges the most specific
// names it (::1/128 is loopback, not merely outside 2000::/3). The host's
// own addresses given to New are not part of the fixed table.
func AlwaysRefused(p netip.Prefix) (reason string, ok bool) {
	if !p.IsValid() {
		return "", false
	}
	p = p.Masked()
	best, first := -1, -1
	for i, f := range forbidden {
		if !f.prefix.Overlaps(p) {
			continue
		}
		if first < 0 {
			first = i
		}
		if f.prefix.Bits() <= p.Bits() && (best < 0 || f.prefix.Bits() > forbidden[best].prefix.Bits()) {
			best = i
		}
	}
	if best < 0 {
		best = first
	}
	if best < 0 {
		return "", false
	}
	return forbidden[best].prefix.String() + " is " + forbidden[best].reason, true
}
