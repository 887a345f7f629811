package policy

import (
	"fmt"
	"strings"
)

// Within returns nil when every rule of rs is covered by some rule of
// ceiling, else an error naming the first rule that is not and listing
// what the ceiling allows (or saying it allows nothing).
//
// A Host rule is covered by an equal Host rule or by a Suffix rule it is
// a strict subdomain of; a Suffix rule by an equal or shorter Suffix rule
// (*.a.example.com is within *.example.com); a Prefix rule by a Prefix
// rule of the same family containing it; and the ports must lie within
// the covering rule's ports. Name rules are never covered by Prefix
// rules, nor Prefix rules by name rules: which addresses a name has is
// not known until it is resolved, and can change.
func (rs Rules) Within(ceiling Rules) error {
	for _, r := range rs {
		if ceiling.covers(r) {
			continue
		}
		if len(ceiling) == 0 {
			return fmt.Errorf("%s is not allowed: the ceiling allows no network access; remove the rule or ask the operator to allow it", r)
		}
		return fmt.Errorf("%s is not allowed: the ceiling allows only %s; narrow the rule to fit within those", r, strings.Join(ceiling.Strings(), ", "))
	}
	return nil
}

// covers reports whether some rule of rs covers r.
func (rs Rules) covers(r Rule) bool {
	for _, c := range rs {
		if r.Ports.Within(c.Ports) && c.coversTarget(r) {
			return true
		}
	}
	return false
}

// coversTarget reports whether c allows every destination r does, ports
// aside.
func (c Rule) coversTarget(r Rule) bool {
	switch {
	case r.Host != "":
		return c.Host == r.Host || c.Suffix != "" && isSubdomain(r.Host, c.Suffix)
	case r.Suffix != "":
		return c.Suffix != "" && (c.Suffix == r.Suffix || isSubdomain(r.Suffix, c.Suffix))
	case r.Prefix.IsValid():
		return c.Prefix.IsValid() && c.Prefix.Addr().Is4() == r.Prefix.Addr().Is4() &&
			c.Prefix.Bits() <= r.Prefix.Bits() && c.Prefix.Contains(r.Prefix.Addr())
	}
	return false
}
