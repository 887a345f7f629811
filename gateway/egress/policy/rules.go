package policy

import (
	"net/netip"
	"strings"
)

// Rules is an allowlist: a destination is allowed when any rule allows
// it. The zero value allows nothing.
type Rules []Rule

// ParseRules parses a list of rules with ParseRule. The error names the
// first bad entry and the syntax rules accept.
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

// Strings returns the rules' canonical texts, which ParseRules reads
// back to the same rules.
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

// MatchName returns the first Host or Suffix rule allowing the host name
// on port. name must be normalised (guard.Normalize's Name): a name in
// any other spelling matches nothing.
func (rs Rules) MatchName(name string, port uint16) (Rule, bool) {
	if name == "" {
		return Rule{}, false
	}
	for _, r := range rs {
		if r.Ports.Contains(port) && r.matchesName(name) {
			return r, true
		}
	}
	return Rule{}, false
}

// matchesName reports whether r's Host is name, or name is a strict
// subdomain of r's Suffix.
func (r Rule) matchesName(name string) bool {
	switch {
	case r.Host != "":
		return r.Host == name
	case r.Suffix != "":
		return isSubdomain(name, r.Suffix)
	}
	return false
}

// isSubdomain reports whether name is a strict subdomain of suffix:
// a.example.com of example.com, but not example.com itself nor
// badexample.com.
func isSubdomain(name, suffix string) bool {
	return len(name) > len(suffix)+1 && strings.HasSuffix(name, suffix) && name[len(name)-len(suffix)-1] == '.'
}

// MatchAddr returns the first Prefix rule containing ip and allowing
// port. An address with a zone matches nothing.
func (rs Rules) MatchAddr(ip netip.Addr, port uint16) (Rule, bool) {
	if ip.Zone() != "" {
		return Rule{}, false
	}
	for _, r := range rs {
		if r.Prefix.IsValid() && r.Ports.Contains(port) && r.Prefix.Contains(ip) {
			return r, true
		}
	}
	return Rule{}, false
}

// HasAddrRules reports whether any Prefix rule allows port, so that a
// name no name rule allows may still be reached at addresses inside
// those prefixes.
func (rs Rules) HasAddrRules(port uint16) bool {
	for _, r := range rs {
		if r.Prefix.IsValid() && r.Ports.Contains(port) {
			return true
		}
	}
	return false
}
