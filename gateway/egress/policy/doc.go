// Package policy holds egress allowlists: rules naming hosts, subdomain
// wildcards or address ranges, each with ports, and the checks on them
// (match a destination; is one list within another).
package policy
