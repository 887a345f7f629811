package guard_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

// TestCheckBreakouts has, for every range Check refuses, an address
// inside it and, where the neighbour is public, one just outside.
// A want of "" means the address may be dialled.
func TestCheckBreakouts(t *testing.T) {
	t.Parallel()
	g := guard.New([]netip.Prefix{
		netip.MustParsePrefix("8.8.4.4/32"),
		netip.MustParsePrefix("93.184.216.0/24"),
		netip.MustParsePrefix("2a01:4f8:1:2::/64"),
	})
	tests := []struct{ ip, want string }{
		{"0.0.0.0", "unspecified"}, {"0.255.255.255", "unspecified"}, {"1.0.0.0", ""},
		{"10.0.0.0", "RFC 1918"}, {"10.255.255.255", "RFC 1918"}, {"9.255.255.255", ""}, {"11.0.0.0", ""},
		{"172.16.0.0", "RFC 1918"}, {"172.31.255.255", "RFC 1918"}, {"172.15.255.255", ""}, {"172.32.0.0", ""},
		{"192.168.0.1", "RFC 1918"}, {"192.168.255.255", "RFC 1918"}, {"192.167.255.255", ""}, {"192.169.0.0", ""},
		{"100.64.0.0", "carrier-grade NAT"}, {"100.127.255.255", "carrier-grade NAT"}, {"100.63.255.255", ""}, {"100.128.0.0", ""},
		{"127.0.0.1", "loopback"}, {"127.255.255.254", "loopback"}, {"126.255.255.255", ""}, {"128.0.0.0", ""},
		{"169.254.169.254", "link-local"}, {"169.254.0.0", "link-local"}, {"169.253.255.255", ""}, {"169.255.0.0", ""},
		{"192.0.0.8", "reserved"}, {"192.0.0.255", "reserved"}, {"191.255.255.255", ""}, {"192.0.1.0", ""},
		{"192.0.2.1", "TEST-NET-1"}, {"192.0.3.0", ""},
		{"192.88.99.1", "6to4 relay"}, {"192.88.98.255", ""}, {"192.88.100.0", ""},
		{"198.18.0.1", "benchmarking"}, {"198.19.255.255", "benchmarking"}, {"198.17.255.255", ""}, {"198.20.0.0", ""},
		{"198.51.100.1", "TEST-NET-2"}, {"198.51.99.255", ""}, {"198.51.101.0", ""},
		{"203.0.113.9", "TEST-NET-3"}, {"203.0.112.255", ""}, {"203.0.114.0", ""},
		{"224.0.0.1", "multicast"}, {"239.255.255.250", "multicast"}, {"223.255.255.255", ""},
		{"240.0.0.1", "class E"}, {"255.255.255.254", "class E"}, {"255.255.255.255", "broadcast"},

		{"::", "unspecified"}, {"::1", "loopback"}, {"::2", "IPv4-compatible"}, {"::127.0.0.1", "IPv4-compatible"},
		{"::ffff:127.0.0.1", "IPv4-mapped"}, {"::ffff:169.254.169.254", "IPv4-mapped"}, {"::ffff:8.8.8.8", "IPv4-mapped"},
		{"::ffff:0:7f00:1", "IPv4-translated"},
		{"64:ff9b::a9fe:a9fe", "NAT64"}, {"64:ff9b::808:808", "NAT64"}, {"64:ff9b:1::1", "NAT64"},
		{"100::1", "discard"}, {"100::ffff:ffff:ffff:ffff", "discard"}, {"100:0:0:1::", "reserved"},
		{"2001::1", "Teredo"}, {"2001:0:ffff::", "Teredo"},
		{"2001:10::1", "ORCHID"}, {"2001:20::1", "ORCHIDv2"}, {"2001:2f:ffff::1", "ORCHIDv2"},
		{"2001:1::1", "IETF"}, {"2001:4:112::1", "IETF"}, {"2001:1ff:ffff::1", "IETF"}, {"2001:200::1", ""},
		{"2001:db8::1", "documentation"}, {"2001:db7:ffff::1", ""}, {"2001:db9::", ""},
		{"2002:7f00:1::1", "6to4"}, {"2002::", "6to4"}, {"2001:ffff:ffff::1", ""}, {"2003::1", ""},
		{"3fff::1", "documentation"}, {"3fff:fff::1", "documentation"}, {"3fff:1000::", ""}, {"3ffe:ffff::1", ""},
		{"fc00::1", "unique local"}, {"fd12:3456::1", "unique local"}, {"fbff::1", "reserved"},
		{"fe80::1", "link-local"}, {"febf::1", "link-local"}, {"fec0::1", "site-local"}, {"feff::1", "site-local"},
		{"ff02::1", "multicast"}, {"ff0e::1", "multicast"},
		{"1fff:ffff::1", "outside IPv6 global unicast"}, {"4000::1", "outside IPv6 global unicast"},
		{"5f00::1", "outside IPv6 global unicast"}, {"e000::1", "outside IPv6 global unicast"},

		{"8.8.4.4", "own address"}, {"8.8.4.5", ""}, {"93.184.216.34", "own address"}, {"93.184.217.0", ""},
		{"2a01:4f8:1:2::99", "own address"}, {"2a01:4f8:1:3::1", ""},

		{"1.1.1.1", ""}, {"8.8.8.8", ""}, {"2606:4700:4700::1111", ""}, {"2a00:1450:4001::1", ""}, {"2000::", ""},
	}
	for _, tc := range tests {
		t.Run(tc.ip, func(t *testing.T) {
			t.Parallel()
			ip := netip.MustParseAddr(tc.ip)
			err := g.Check(ip)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", ip, err)
				}
				return
			}
			var r *guard.Refusal
			if !errors.As(err, &r) || !strings.Contains(r.Reason, tc.want) || r.IP != ip {
				t.Fatalf("Check(%s) = %v, want a *Refusal of %s for %q", ip, err, ip, tc.want)
			}
			if !strings.Contains(err.Error(), ip.String()) || !strings.Contains(err.Error(), "may never") {
				t.Errorf("Check(%s) error %q should name the address and say it is never reachable", ip, err)
			}
		})
	}
}

func TestCheckOddAddresses(t *testing.T) {
	t.Parallel()
	for _, g := range []*guard.Guard{guard.New(nil), nil, {}} {
		if err := g.Check(netip.MustParseAddr("fe80::1%eth0")); err == nil {
			t.Error("an address with a zone was allowed")
		}
		if err := g.Check(netip.MustParseAddr("2606:4700::1%eth0")); err == nil {
			t.Error("a public address with a zone was allowed")
		}
		if err := g.Check(netip.Addr{}); err == nil {
			t.Error("the zero address was allowed")
		}
		if err := g.Check(netip.MustParseAddr("127.0.0.1")); err == nil {
			t.Error("loopback was allowed by a nil or zero Guard")
		}
		if err := g.Check(netip.MustParseAddr("1.1.1.1")); err != nil {
			t.Errorf("a public address was refused: %v", err)
		}
	}
}

// TestNormalizeThenCheck is the path a proxy takes: every spelling of a
// forbidden address is refused once normalised.
func TestNormalizeThenCheck(t *testing.T) {
	t.Parallel()
	g := guard.New(nil)
	for _, in := range []string{"2130706433", "127.1", "0x7f.1", "017700000001", "0x7f000001", "[::1]",
		"[::ffff:169.254.169.254]", "0:0:0:0:0:ffff:7f00:1", "169.254.43518", "0xa9fea9fe", "１２７．０．０．１",
		"[::]", "0", "[64:ff9b::7f00:1]", "[2002:7f00:1::]", "10.1", "0300.0250.1.1"} {
		h, err := guard.Normalize(in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", in, err)
			continue
		}
		if err := g.Check(h.IP); err == nil {
			t.Errorf("Normalize(%q) = %s, which Check allowed", in, h.IP)
		}
	}
}

func TestAlwaysRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix string
		want   string // "" when no address of the prefix is always refused
	}{
		{"10.0.0.0/8", "10.0.0.0/8 is private"}, {"10.1.0.0/16", "10.0.0.0/8 is private"},
		{"0.0.0.0/0", "0.0.0.0/8"}, {"8.0.0.0/6", "10.0.0.0/8"}, {"127.0.0.1/32", "loopback"},
		{"169.254.169.254/32", "link-local"}, {"100.0.0.0/8", "carrier-grade"}, {"::1/128", "::1/128 is loopback"},
		{"::/0", "reserved"}, {"2001:db8::/48", "documentation"}, {"2001::/16", "2001::/23"},
		{"8.0.0.0/8", ""}, {"2606:4700::/32", ""}, {"1.1.1.1/32", ""}, {"2000::/16", ""},
	}
	for _, tc := range tests {
		reason, got := guard.AlwaysRefused(netip.MustParsePrefix(tc.prefix))
		if got != (tc.want != "") || !strings.Contains(reason, tc.want) {
			t.Errorf("AlwaysRefused(%s) = %q, %v; want %q", tc.prefix, reason, got, tc.want)
		}
	}
	if _, ok := guard.AlwaysRefused(netip.Prefix{}); ok {
		t.Error("AlwaysRefused of the zero prefix")
	}
}

func TestHostPrefixes(t *testing.T) {
	t.Parallel()
	ps, err := guard.HostPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(ps)
	for _, p := range ps {
		if p != p.Masked() {
			t.Errorf("HostPrefixes gave %s, not in canonical form", p)
		}
		if err := g.Check(p.Addr()); err == nil {
			t.Errorf("the host's own %s was allowed", p)
		}
	}
}
