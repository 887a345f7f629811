package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

// Ports is an inclusive port range; {1, 65535} is any port.
type Ports struct{ Lo, Hi uint16 }

// AnyPort is every port.
var AnyPort = Ports{1, 65535}

// Contains reports whether port is in the range.
func (p Ports) Contains(port uint16) bool { return p.Lo <= port && port <= p.Hi }

// Within reports whether p lies inside q.
func (p Ports) Within(q Ports) bool { return q.Lo <= p.Lo && p.Hi <= q.Hi }

func (p Ports) String() string {
	switch {
	case p == AnyPort:
		return ""
	case p.Lo == p.Hi:
		return strconv.Itoa(int(p.Lo))
	}
	return fmt.Sprintf("%d-%d", p.Lo, p.Hi)
}

// Rule allows connections to one kind of destination: exactly one of
// Host, Suffix and Prefix is set.
type Rule struct {
	Host   string       // an exact host name, normalised
	Suffix string       // "*.example.com" is Suffix "example.com": strict subdomains only
	Prefix netip.Prefix // an address range; a single address is a /32 or /128
	Ports  Ports
}

// syntax is what a refused rule's error shows.
const syntax = "want host, *.suffix, CIDR or IP, optionally with :port, :lo-hi or :* (IPv6 in brackets: [2001:db8::/32]:443)"

// ParseRule parses one rule.
func ParseRule(s string) (Rule, error) {
	target, ports, err := splitPorts(strings.TrimSpace(s))
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w; %s", s, err, syntax)
	}
	r := Rule{Ports: ports}
	switch {
	case target == "":
		return Rule{}, fmt.Errorf("rule %q is empty; %s", s, syntax)
	case strings.Contains(target, "/"):
		p, err := netip.ParsePrefix(target)
		if err != nil {
			return Rule{}, fmt.Errorf("rule %q: bad CIDR: %v; %s", s, err, syntax)
		}
		if p.Masked() != p {
			return Rule{}, fmt.Errorf("rule %q: %s has host bits set; did you mean %s?", s, p, p.Masked())
		}
		r.Prefix = p
	case strings.HasPrefix(target, "*."):
		h, err := guard.Normalize(target[2:])
		if err != nil || h.IP.IsValid() {
			return Rule{}, fmt.Errorf("rule %q: a wildcard needs a domain after \"*.\"; %s", s, syntax)
		}
		if !strings.Contains(h.Name, ".") {
			return Rule{}, fmt.Errorf("rule %q is too broad: a wildcard needs at least two labels after \"*.\" (e.g. *.example.com)", s)
		}
		r.Suffix = h.Name
	case strings.Contains(target, "*"):
		return Rule{}, fmt.Errorf("rule %q: \"*\" may only be the whole first label (*.example.com); %s", s, syntax)
	default:
		h, err := guard.Normalize(target)
		if err != nil {
			return Rule{}, fmt.Errorf("rule %q: %v; %s", s, err, syntax)
		}
		if h.IP.IsValid() {
			r.Prefix = netip.PrefixFrom(h.IP, h.IP.BitLen())
		} else {
			r.Host = h.Name
		}
	}
	if r.Prefix.IsValid() {
		if why, bad := guard.AlwaysRefused(r.Prefix); bad {
			return Rule{}, fmt.Errorf("rule %q covers addresses that are always refused, whatever the policy (%s)", s, why)
		}
	}
	return r, nil
}

// splitPorts separates "target:ports"; a target without a port allows
// any. IPv6 targets with a port are bracketed.
func splitPorts(s string) (string, Ports, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", Ports{}, errors.New("unclosed [")
		}
		target, rest := s[1:end], s[end+1:]
		if rest == "" {
			return target, AnyPort, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", Ports{}, fmt.Errorf("unexpected %q after ]", rest)
		}
		p, err := parsePorts(rest[1:])
		return target, p, err
	}
	if strings.Count(s, ":") > 1 { // a bare IPv6 address or range
		return s, AnyPort, nil
	}
	target, port, ok := strings.Cut(s, ":")
	if !ok {
		return s, AnyPort, nil
	}
	p, err := parsePorts(port)
	return target, p, err
}

func parsePorts(s string) (Ports, error) {
	if s == "*" {
		return AnyPort, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.ParseUint(lo, 10, 16)
	h, err2 := strconv.ParseUint(hi, 10, 16)
	if err1 != nil || err2 != nil || l == 0 || h < l {
		return Ports{}, fmt.Errorf("bad port %q (1-65535, lo-hi or *)", s)
	}
	return Ports{uint16(l), uint16(h)}, nil
}

// String is the rule's canonical text; ParseRule(r.String()) == r.
func (r Rule) String() string {
	var target string
	switch {
	case r.Host != "":
		target = r.Host
	case r.Suffix != "":
		target = "*." + r.Suffix
	case r.Prefix.IsSingleIP():
		target = r.Prefix.Addr().String()
	default:
		target = r.Prefix.String()
	}
	ports := r.Ports.String()
	if ports == "" {
		return target
	}
	if r.Prefix.IsValid() && r.Prefix.Addr().Is6() {
		return "[" + target + "]:" + ports
	}
	return target + ":" + ports
}
