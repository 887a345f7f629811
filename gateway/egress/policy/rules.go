package policy

import (
	"fmt"
	"net/netip"
	"strings"
)

// Rules is an allowlist; a destination is allowed when any rule allows it.
type Rules []Rule

// ParseRules parses a list of rules; the error names the bad entry.
func ParseRules(list []string) (Rules, error) {
	if len(list) == 0 {
		return nil, nil
	}
	rs := make(Rules, 0, len(list))
	for _, s := range list {
		r, err := ParseRule(s)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Strings returns the rules' canonical texts.
func (rs Rules) Strings() []string {
	if rs == nil {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// MatchName returns the first Host or Suffix rule allowing the
// normalised host name on port.
func (rs Rules) MatchName(name string, port uint16) (Rule, bool) {
	for _, r := range rs {
		if !r.Ports.Contains(port) {
			continue
		}
		if r.Host != "" && r.Host == name || r.Suffix != "" && strings.HasSuffix(name, "."+r.Suffix) {
			return r, true
		}
	}
	return Rule{}, false
}

// MatchAddr returns the first Prefix rule containing ip and allowing port.
func (rs Rules) MatchAddr(ip netip.Addr, port uint16) (Rule, bool) {
	for _, r := range rs {
		if r.Prefix.IsValid() && r.Ports.Contains(port) && r.Prefix.Contains(ip) {
			return r, true
		}
	}
	return Rule{}, false
}

// HasAddrRules reports whether any Prefix rule allows port, so a name no
// name rule allows may still be reached at addresses inside those ranges.
func (rs Rules) HasAddrRules(port uint16) bool {
	for _, r := range rs {
		if r.Prefix.IsValid() && r.Ports.Contains(port) {
			return true
		}
	}
	return false
}

// Within returns nil when every rule of rs is covered by a rule of
// ceiling, else an error naming the first that is not and what the
// ceiling allows. Name rules are covered only by name rules, address
// rules only by address rules: which addresses a name has is not known
// until it is resolved.
func (rs Rules) Within(ceiling Rules) error {
	for _, r := range rs {
		if !ceiling.covers(r) {
			if len(ceiling) == 0 {
				return fmt.Errorf("%s is not allowed: the operator allows no network access", r)
			}
			return fmt.Errorf("%s is not allowed; allowed: %s", r, strings.Join(ceiling.Strings(), ", "))
		}
	}
	return nil
}

func (rs Rules) covers(r Rule) bool {
	for _, c := range rs {
		if r.Ports.Within(c.Ports) && c.coversTarget(r) {
			return true
		}
	}
	return false
}

// coversTarget reports whether c's target includes r's, ports aside.
func (c Rule) coversTarget(r Rule) bool {
	switch {
	case r.Host != "":
		return c.Host == r.Host || c.Suffix != "" && strings.HasSuffix(r.Host, "."+c.Suffix)
	case r.Suffix != "":
		return c.Suffix != "" && (c.Suffix == r.Suffix || strings.HasSuffix(r.Suffix, "."+c.Suffix))
	case r.Prefix.IsValid():
		return c.Prefix.IsValid() && c.Prefix.Addr().Is4() == r.Prefix.Addr().Is4() &&
			c.Prefix.Bits() <= r.Prefix.Bits() && c.Prefix.Contains(r.Prefix.Addr())
	}
	return false
}
