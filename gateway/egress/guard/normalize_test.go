package guard_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, name, ip string }{
		// Names: case, trailing dot, IDNA, underscore, hyphens.
		{"Example.COM", "example.com", ""},
		{"example.com.", "example.com", ""},
		{"BÜCHER.example", "xn--bcher-kva.example", ""},
		{"bücher.example.", "xn--bcher-kva.example", ""},
		{"XN--BCHER-KVA.example", "xn--bcher-kva.example", ""},
		{"ß.de", "xn--zca.de", ""},
		{"a\u3002b.example", "a.b.example", ""}, // ideographic full stop
		{"_acme-challenge.example.com", "_acme-challenge.example.com", ""},
		{"r3---sn-apo3qvuoxuxbt-j5pe.googlevideo.com", "r3---sn-apo3qvuoxuxbt-j5pe.googlevideo.com", ""},
		{"1.2.3.com", "1.2.3.com", ""},
		{"08.example.com", "08.example.com", ""},
		{"0x7f.0.0.1a", "0x7f.0.0.1a", ""},
		{"localhost", "localhost", ""},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com", ""},

		// IPv4 in every inet_aton spelling.
		{"127.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"1.2.3.4.", "1.2.3.4", "1.2.3.4"},
		{"2130706433", "127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1", "127.0.0.1"},
		{"0x7f.0.0x0.01", "127.0.0.1", "127.0.0.1"},
		{"169.254.43518", "169.254.169.254", "169.254.169.254"},
		{"0xa9.0376.0xa9fe", "169.254.169.254", "169.254.169.254"},
		{"0", "0.0.0.0", "0.0.0.0"},
		{"0x", "0.0.0.0", "0.0.0.0"},
		{"4294967295", "255.255.255.255", "255.255.255.255"},
		{"1.16777215", "1.255.255.255", "1.255.255.255"},
		{"１２７．０．０．１", "127.0.0.1", "127.0.0.1"}, // full-width digits and dots
		{"¹²⁷.1", "127.0.0.1", "127.0.0.1"},     // superscripts map to digits

		// IPv6, bracketed or bare; embedded IPv4 stays embedded.
		{"[::1]", "::1", "::1"},
		{"::1", "::1", "::1"},
		{"[::ffff:127.0.0.1]", "::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"[::ffff:169.254.169.254]", "::ffff:169.254.169.254", "::ffff:169.254.169.254"},
		{"0:0:0:0:0:ffff:7f00:1", "::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"[2001:DB8::1]", "2001:db8::1", "2001:db8::1"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			h, err := guard.Normalize(tc.in)
			if err != nil {
				t.Fatalf("Normalize(%q): %v", tc.in, err)
			}
			if h.Name != tc.name {
				t.Errorf("Normalize(%q).Name = %q, want %q", tc.in, h.Name, tc.name)
			}
			if got := map[bool]string{true: h.IP.String(), false: ""}[h.IP.IsValid()]; got != tc.ip {
				t.Errorf("Normalize(%q).IP = %q, want %q", tc.in, got, tc.ip)
			}
		})
	}
}

func TestNormalizeRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, hint string }{
		{"", "empty"},
		{".", "empty"},
		{"example.com..", "empty label"},
		{".example.com", "empty label"},
		{"a..b", "empty label"},
		{strings.Repeat("a", 64) + ".com", "63"},
		{strings.Repeat("abcdefghi.", 26) + "com", "253"},
		{strings.Repeat("a", 2000), "too long"},
		{"exa mple.com", "not allowed"},
		{"exa/mple.com", "not allowed"},
		{"exa%mple.com", "not allowed"},
		{"xn--zz.example", "internationalised"},

		// Numeric-looking hosts that are not addresses are not names.
		{"1.2.3.4.5", "at most 4"},
		{"08.1.1.1", "base-8"},
		{"1.2.3.09", "base-8"},
		{"256.1.1.1", "over 255"},
		{"1.2.3.256", "does not fit"},
		{"1.2.65536", "does not fit"},
		{"1.16777216", "does not fit"},
		{"4294967296", "2^32"},
		{"0x100000000", "2^32"},
		{"example.123", "IPv4"},
		{"example.0x1f", "IPv4"},
		{"a.0x", "IPv4"},
		{"１２７．０．０．１．５", "IPv4"},

		// IPv6 literals.
		{"fe80::1%eth0", "zone"},
		{"[fe80::1%25eth0]", "zone"},
		{"[::1", "brackets"},
		{"::1]", "brackets"},
		{"[127.0.0.1]", "IPv6"},
		{"[example.com]", "IPv6"},
		{"a:b", "IPv6"},
		{"::ffff:127.000.0.1", "IPv6"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			h, err := guard.Normalize(tc.in)
			if err == nil {
				t.Fatalf("Normalize(%q) = %+v, want an error", tc.in, h)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("Normalize(%q) error %q does not mention %q", tc.in, err, tc.hint)
			}
		})
	}
}
