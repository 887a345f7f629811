package guard

import (
	"fmt"
	"net"
	"net/netip"
)

// Refusal says why an address may never be dialled.
type Refusal struct {
	// IP is the address refused.
	IP netip.Addr
	// Reason is short and stable ("loopback", "private (RFC 1918)").
	Reason string
}

// Error says what was refused and that no policy can change it.
func (r *Refusal) Error() string {
	return fmt.Sprintf("%s is %s; sandboxes may never reach it, whatever the policy", r.IP, r.Reason)
}

// ownReason is the reason for the host's own addresses and networks.
const ownReason = "this host's own address"

// Guard classifies addresses: the fixed table of forbidden ranges plus
// the host's own addresses. Use New; a nil or zero Guard checks only the
// fixed table. A Guard is immutable and safe for concurrent use.
type Guard struct {
	own []netip.Prefix
}

// New returns a Guard that, besides the fixed table, refuses the given
// addresses and networks (the host's own interfaces, container
// bridges; see HostPrefixes).
func New(own []netip.Prefix) *Guard {
	g := &Guard{}
	for _, p := range own {
		if p.IsValid() {
			g.own = append(g.own, p.Masked())
		}
	}
	return g
}

// Check returns nil when ip may be dialled, or a *Refusal saying why
// not. Invalid addresses and addresses with a zone are refused.
func (g *Guard) Check(ip netip.Addr) error {
	switch {
	case !ip.IsValid():
		return &Refusal{IP: ip, Reason: "not an address"}
	case ip.Zone() != "":
		return &Refusal{IP: ip, Reason: "an address with a zone"}
	}
	if reason, ok := fixedReason(ip); ok {
		return &Refusal{IP: ip, Reason: reason}
	}
	if g == nil {
		return nil
	}
	for _, p := range g.own {
		if p.Contains(ip) {
			return &Refusal{IP: ip, Reason: ownReason}
		}
	}
	return nil
}

// HostPrefixes lists this machine's interface addresses, each as a
// single-address prefix (/32 or /128), and the networks of its
// interfaces, for New. The networks are included because whatever
// shares a link with the gateway (a provider's private VLAN, a
// management network with public addresses) is the gateway's
// neighbourhood, not the internet.
func HostPrefixes() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the host's interface addresses: %w", err)
	}
	seen := make(map[netip.Prefix]bool)
	var out []netip.Prefix
	add := func(p netip.Prefix) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ones, bits := ipn.Mask.Size()
		if ip.Is4In6() && bits == 128 && ones >= 96 { // an IPv4 network written in IPv6 form
			ones, bits = ones-96, 32
		}
		ip = ip.Unmap()
		add(netip.PrefixFrom(ip, ip.BitLen()))
		if bits == ip.BitLen() && ones < bits {
			add(netip.PrefixFrom(ip, ones).Masked())
		}
	}
	return out, nil
}
