package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/sandgate/sandgate/gateway/egress/guard"
	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/runner/protocol"
)

// target is an allowed destination, before it is resolved.
type target struct {
	kind string
	host guard.Host
	port uint16
	// rule is the sandbox rule that allowed the host, or "" when only
	// address rules can: then addrOK decides per resolved address.
	rule   string
	addrOK func(netip.Addr) (rule string, ok bool)
}

// addr is host:port as the client asked for it, normalised.
func (t target) addr() string { return net.JoinHostPort(t.host.Name, strconv.Itoa(int(t.port))) }

// refusal is a verdict other than 200, with its reason.
type refusal struct {
	status int
	reason string
}

func (r *refusal) Error() string { return r.reason }

func refuse(status int, dest, format string, args ...any) *refusal {
	return &refusal{status: status, reason: fmt.Sprintf("sandgate egress to %s refused: ", dest) + fmt.Sprintf(format, args...)}
}

// decide applies g's allowlist and its tenant's ceiling to what the
// runner asked for. It does no I/O; resolving comes later.
func (s *Service) decide(g *Gate, open protocol.EgressOpen) (target, *refusal) {
	asked := net.JoinHostPort(open.Host, strconv.Itoa(int(open.Port)))
	switch open.Kind {
	case "connect", "http", "socks5":
	default:
		return target{}, refuse(http.StatusBadRequest, asked, "unknown proxy kind %q", open.Kind)
	}
	host, err := guard.Normalize(open.Host)
	if err != nil {
		return target{}, refuse(http.StatusBadRequest, asked, "invalid host: %v", err)
	}
	if open.Port == 0 {
		return target{}, refuse(http.StatusBadRequest, asked, "port 0 is not a destination")
	}
	t := target{kind: open.Kind, host: host, port: open.Port}
	allow, ceiling := g.Allow(), s.opts.Ceiling(g.Tenant)
	if host.IP.IsValid() {
		if err := s.opts.Guard.Check(host.IP); err != nil {
			return target{}, refuse(http.StatusForbidden, t.addr(), "%v", err)
		}
		r, ok := bothAddr(allow, ceiling, host.IP, open.Port)
		if !ok {
			return target{}, s.notAllowed(t, allow, ceiling)
		}
		t.rule = r
		return t, nil
	}
	if r, ok := allow.MatchName(host.Name, open.Port); ok {
		if _, ok := ceiling.MatchName(host.Name, open.Port); ok {
			t.rule = r.String()
			return t, nil
		}
	}
	if allow.HasAddrRules(open.Port) && ceiling.HasAddrRules(open.Port) {
		// Only the addresses the name resolves to can tell.
		t.addrOK = func(ip netip.Addr) (string, bool) { return bothAddr(allow, ceiling, ip, open.Port) }
		return t, nil
	}
	return target{}, s.notAllowed(t, allow, ceiling)
}

// bothAddr reports whether ip:port is allowed by the sandbox's list and
// the ceiling, and names the sandbox's rule.
func bothAddr(allow, ceiling policy.Rules, ip netip.Addr, port uint16) (string, bool) {
	r, ok := allow.MatchAddr(ip, port)
	if !ok {
		return "", false
	}
	if _, ok := ceiling.MatchAddr(ip, port); !ok {
		return "", false
	}
	return r.String(), true
}

// notAllowed says which list refused t and what it does allow.
func (s *Service) notAllowed(t target, allow, ceiling policy.Rules) *refusal {
	if len(allow) == 0 {
		return refuse(http.StatusForbidden, t.addr(), "this sandbox may not reach the network (its allowlist is empty); allow the host with the sandbox_network tool, within what the operator permits (%s)", describe(ceiling))
	}
	_, byName := allow.MatchName(t.host.Name, t.port)
	byAddr := false
	if t.host.IP.IsValid() {
		_, byAddr = allow.MatchAddr(t.host.IP, t.port)
	}
	if byName || byAddr {
		return refuse(http.StatusForbidden, t.addr(), "not within what the operator permits your tenant (%s)", describe(ceiling))
	}
	return refuse(http.StatusForbidden, t.addr(), "not in this sandbox's allowlist (%s)", describe(allow))
}
