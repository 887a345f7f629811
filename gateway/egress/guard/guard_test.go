package guard_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	good := []struct{ in, name, ip string }{
		{"Example.COM", "example.com", ""},
		{"example.com.", "example.com", ""},
		{"BÜCHER.example", "xn--bcher-kva.example", ""},
		{"_acme-challenge.example.com", "_acme-challenge.example.com", ""},
		{"127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1", "127.0.0.1"},
		{"169.254.43518", "169.254.169.254", "169.254.169.254"},
		{"1.2.3.4.", "1.2.3.4", "1.2.3.4"},
		{"[::1]", "::1", "::1"},
		{"::1", "::1", "::1"},
		{"[::ffff:169.254.169.254]", "::ffff:169.254.169.254", "::ffff:169.254.169.254"},
		{"0:0:0:0:0:ffff:7f00:1", "::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"[2001:DB8::1]", "2001:db8::1", "2001:db8::1"},
	}
	for _, tc := range good {
		h, err := guard.Normalize(tc.in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", tc.in, err)
			continue
		}
		if h.Name != tc.name || (tc.ip == "") == h.IP.IsValid() || tc.ip != "" && h.IP.String() != tc.ip {
			t.Errorf("Normalize(%q) = %+v, want name %q ip %q", tc.in, h, tc.name, tc.ip)
		}
	}
	bad := []string{"", ".", "example.com..", ".example.com", "a..b", "1.2.3.4.5", "08.1.1.1", "256.1.1.1", "1.2.3.256",
		"1.16777216", "4294967296", "example.123", "fe80::1%eth0", "[fe80::1%25eth0]", "exa mple.com", "exa/mple.com",
		"a:b", strings.Repeat("a", 64) + ".com", strings.Repeat("abcdefghi.", 26) + "com"}
	for _, in := range bad {
		if h, err := guard.Normalize(in); err == nil {
			t.Errorf("Normalize(%q) = %+v, want an error", in, h)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	g := guard.New([]netip.Prefix{netip.MustParsePrefix("198.51.100.77/32"), netip.MustParsePrefix("8.8.4.4/32")})
	refused := map[string]string{
		"0.0.0.0": "unspecified", "0.1.2.3": "unspecified",
		"10.0.0.1": "private", "10.255.255.255": "private", "172.16.0.1": "private", "172.31.255.255": "private", "192.168.1.1": "private",
		"100.64.0.1": "carrier-grade", "100.127.255.255": "carrier-grade",
		"127.0.0.1": "loopback", "127.255.255.254": "loopback",
		"169.254.169.254": "link-local", "169.254.0.1": "link-local",
		"192.0.0.8": "reserved", "192.0.2.1": "documentation", "198.51.100.1": "documentation", "203.0.113.9": "documentation",
		"198.18.0.1": "benchmarking", "198.19.255.255": "benchmarking", "192.88.99.1": "6to4",
		"224.0.0.1": "multicast", "239.255.255.250": "multicast", "240.0.0.1": "reserved", "255.255.255.255": "reserved",
		"::": "unspecified", "::1": "loopback", "::ffff:127.0.0.1": "IPv4-mapped", "::ffff:8.8.8.8": "IPv4-mapped",
		"::127.0.0.1": "IPv4-compatible", "64:ff9b::a9fe:a9fe": "NAT64", "64:ff9b:1::1": "NAT64", "100::1": "discard",
		"2001::1": "Teredo", "2001:db8::1": "documentation", "2001:10::1": "reserved", "2002:7f00:1::1": "6to4",
		"3fff::1": "documentation", "fc00::1": "unique local", "fd12:3456::1": "unique local", "fe80::1": "link-local",
		"fec0::1": "site-local", "ff02::1": "multicast",
		"8.8.4.4": "own address",
	}
	for s, want := range refused {
		err := g.Check(netip.MustParseAddr(s))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s) = %v, want a refusal mentioning %q", s, err, want)
		}
	}
	allowed := []string{"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
		"128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0",
		"198.17.255.255", "198.20.0.0", "223.255.255.255", "2606:4700:4700::1111", "2a00:1450:4001::1", "2001:200::1"}
	for _, s := range allowed {
		if err := g.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", s, err)
		}
	}
	if err := g.Check(netip.MustParseAddr("fe80::1%eth0")); err == nil {
		t.Error("an address with a zone was allowed")
	}
	if err := g.Check(netip.Addr{}); err == nil {
		t.Error("the zero address was allowed")
	}
}

func TestAlwaysRefused(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"10.0.0.0/8": true, "0.0.0.0/0": true, "127.0.0.1/32": true, "8.0.0.0/7": false,
		"::/0": true, "2606:4700::/32": false, "169.254.169.254/32": true, "100.0.0.0/8": true} {
		if _, got := guard.AlwaysRefused(netip.MustParsePrefix(s)); got != want {
			t.Errorf("AlwaysRefused(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestHostPrefixes(t *testing.T) {
	t.Parallel()
	ps, err := guard.HostPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range ps {
		if !p.IsSingleIP() {
			t.Errorf("HostPrefixes gave %s, want single addresses", p)
		}
		found = found || p.Addr() == netip.MustParseAddr("127.0.0.1")
	}
	if !found {
		t.Errorf("HostPrefixes %v lacks 127.0.0.1", ps)
	}
}
