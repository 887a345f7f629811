package guard_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "2130706433", "0x7f.1", "0177.0.0.1", "[::1]",
		"[::ffff:169.254.169.254]", "BÜCHER.example.", "1.2.3.4.5", "08.1.1.1", "xn--bcher-kva.example", "a..b",
		"１２７．０．０．１", "¹", "example.0x", "fe80::1%eth0", "_a-b.example", "a\u00adb.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := guard.Normalize(s)
		if err != nil {
			if h != (guard.Host{}) {
				t.Fatalf("Normalize(%q) = %+v with error %v: want the zero Host", s, h, err)
			}
			return
		}
		if h.IP.IsValid() && h.Name != h.IP.String() {
			t.Fatalf("Normalize(%q) = %+v: Name is not the address's text", s, h)
		}
		if h.IP.Zone() != "" {
			t.Fatalf("Normalize(%q) = %+v: an address with a zone", s, h)
		}
		again, err := guard.Normalize(h.Name)
		if err != nil || again != h {
			t.Fatalf("Normalize(%q) = %+v, but Normalize(%q) = %+v, %v", s, h, h.Name, again, err)
		}
		if !h.IP.IsValid() {
			// A name is never one a resolver or inet_aton would read as
			// an address.
			if _, err := netip.ParseAddr(h.Name); err == nil {
				t.Fatalf("Normalize(%q) = name %q, which is an address", s, h.Name)
			}
		}
	})
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1})
	f.Add([]byte{8, 8, 8, 8})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1})
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0x26, 0x06, 0x47, 0, 0x47, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x11})
	g := guard.New(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b) // 4 bytes are IPv4, 16 are IPv6
		if !ok {
			return
		}
		err := g.Check(ip)
		if err != nil {
			var r *guard.Refusal
			if !errors.As(err, &r) || r.Reason == "" || r.IP != ip {
				t.Fatalf("Check(%s) = %v: not a *Refusal of it with a reason", ip, err)
			}
			return
		}
		u := ip.Unmap()
		for name, special := range map[string]bool{
			"IsLoopback": ip.IsLoopback(), "IsPrivate": ip.IsPrivate(), "IsLinkLocalUnicast": ip.IsLinkLocalUnicast(),
			"IsMulticast": ip.IsMulticast(), "IsUnspecified": ip.IsUnspecified(), "IsLinkLocalMulticast": ip.IsLinkLocalMulticast(),
			"IsInterfaceLocalMulticast": ip.IsInterfaceLocalMulticast(), "Is4In6": ip.Is4In6(),
			"unmapped IsLoopback": u.IsLoopback(), "unmapped IsPrivate": u.IsPrivate(), "not IsGlobalUnicast": !ip.IsGlobalUnicast(),
		} {
			if special {
				t.Fatalf("Check(%s) allowed an address netip says is %s", ip, name)
			}
		}
	})
}
