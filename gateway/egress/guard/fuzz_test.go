package guard_test

import (
	"net/netip"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"example.com", "2130706433", "0x7f.1", "[::1]", "BÜCHER.example.", "1.2.3.4.5", "xn--bcher-kva.example", "a..b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := guard.Normalize(s)
		if err != nil {
			return
		}
		if h.IP.IsValid() && h.Name != h.IP.String() {
			t.Fatalf("Normalize(%q) = %+v: name is not the address's text", s, h)
		}
		again, err := guard.Normalize(h.Name)
		if err != nil || again != h {
			t.Fatalf("Normalize(%q) = %+v, but Normalize(%q) = %+v, %v", s, h, h.Name, again, err)
		}
	})
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1})
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	g := guard.New(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		err := g.Check(ip)
		if err != nil {
			if r, ok := err.(*guard.Refusal); !ok || r.Reason == "" {
				t.Fatalf("Check(%s) = %v: not a Refusal with a reason", ip, err)
			}
			return
		}
		u := ip.Unmap()
		if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() ||
			ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || u.IsLoopback() || u.IsPrivate() || !ip.IsGlobalUnicast() {
			t.Fatalf("Check(%s) allowed an address netip calls non-public", ip)
		}
	})
}
