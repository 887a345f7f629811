package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

// Rule allows connections to one kind of destination: exactly one of
// Host, Suffix and Prefix is set.
type Rule struct {
	// Host is an exact host name, normalised by guard.Normalize, or "".
	Host string
	// Suffix is "example.com" for "*.example.com", which matches strict
	// subdomains only, never the apex; or "".
	Suffix string
	// Prefix is an address range for CIDR and IP rules (a single
	// address is a /32 or /128), or the zero Prefix.
	Prefix netip.Prefix
	// Ports are the ports allowed.
	Ports Ports
}

// syntax is what an error about a malformed rule shows.
const syntax = "want host, *.suffix, CIDR or IP, optionally followed by :port, :lo-hi or :* " +
	"(IPv6 in brackets when a port follows: [2001:db8::/32]:443)"

// ParseRule parses one rule: "example.com", "*.example.com",
// "140.82.112.0/20", "8.8.8.8", each optionally followed by ":443",
// ":1-1024" or ":*"; IPv6 with a port is bracketed ("[2606:4700::/32]:443").
// No port means any port. Hosts are normalised by guard.Normalize, so
// "Example.COM." is example.com and "127.1" is an IP rule. Rules whose
// addresses guard always refuses (10.0.0.0/8, 127.0.0.1,
// 169.254.169.254) are errors: no policy can allow them.
func ParseRule(s string) (Rule, error) {
	target, ports, err := splitPorts(strings.TrimSpace(s))
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w; %s", s, err, syntax)
	}
	r, err := parseTarget(target)
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	r.Ports = ports
	if r.Prefix.IsValid() {
		if why, bad := guard.AlwaysRefused(r.Prefix); bad {
			return Rule{}, fmt.Errorf("rule %q covers addresses that are always refused, whatever the policy (%s): allow public addresses only", s, why)
		}
	}
	return r, nil
}

// parseTarget reads the part of a rule before its ports.
func parseTarget(target string) (Rule, error) {
	switch {
	case target == "":
		return Rule{}, fmt.Errorf("empty destination; %s", syntax)
	case strings.Contains(target, "/"):
		p, err := netip.ParsePrefix(target)
		if err != nil {
			return Rule{}, fmt.Errorf("bad CIDR (%v); %s", err, syntax)
		}
		if p.Masked() != p {
			return Rule{}, fmt.Errorf("%s has bits set beyond its /%d; did you mean %s?", p, p.Bits(), p.Masked())
		}
		return Rule{Prefix: p}, nil
	case strings.HasPrefix(target, "*."):
		return parseWildcard(target[2:])
	case strings.Contains(target, "*"):
		return Rule{}, fmt.Errorf("\"*\" may only be the whole first label, as in *.example.com; %s", syntax)
	}
	h, err := guard.Normalize(target)
	if err != nil {
		return Rule{}, fmt.Errorf("%w; %s", err, syntax)
	}
	if h.IP.IsValid() {
		return Rule{Prefix: netip.PrefixFrom(h.IP, h.IP.BitLen())}, nil
	}
	return Rule{Host: h.Name}, nil
}

// parseWildcard reads what follows "*.": a name of two or more labels,
// since "*.com" would allow a whole top-level domain.
func parseWildcard(suffix string) (Rule, error) {
	if suffix == "" || strings.Contains(suffix, "*") {
		return Rule{}, errors.New("a wildcard is \"*.\" followed by a domain with no other \"*\", as in *.example.com")
	}
	h, err := guard.Normalize(suffix)
	switch {
	case err != nil:
		return Rule{}, fmt.Errorf("wildcard domain: %w", err)
	case h.IP.IsValid():
		return Rule{}, errors.New("a wildcard needs a domain name after \"*.\", not an address; write the address or a CIDR instead")
	case !strings.Contains(h.Name, "."):
		return Rule{}, fmt.Errorf("*.%s is too broad: a wildcard needs at least two labels after \"*.\", as in *.example.%s", h.Name, h.Name)
	}
	return Rule{Suffix: h.Name}, nil
}

// splitPorts separates "target:ports"; a target without ports allows
// any. A target with ports is bracketed when it is IPv6; an unbracketed
// target with more than one colon is taken as IPv6 without ports.
func splitPorts(s string) (string, Ports, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", Ports{}, errors.New("unclosed [")
		}
		target, rest := s[1:end], s[end+1:]
		if !strings.Contains(target, ":") {
			return "", Ports{}, fmt.Errorf("brackets are only for IPv6, not %q", target)
		}
		if rest == "" {
			return target, AnyPort, nil
		}
		port, ok := strings.CutPrefix(rest, ":")
		if !ok {
			return "", Ports{}, fmt.Errorf("unexpected %q after ]", rest)
		}
		p, err := parsePorts(port)
		return target, p, err
	}
	if strings.Count(s, ":") > 1 {
		return s, AnyPort, nil
	}
	target, port, ok := strings.Cut(s, ":")
	if !ok {
		return s, AnyPort, nil
	}
	p, err := parsePorts(port)
	return target, p, err
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
	switch {
	case ports == "":
		return target
	case r.Prefix.IsValid() && r.Prefix.Addr().Is6():
		return "[" + target + "]:" + ports
	}
	return target + ":" + ports
}
