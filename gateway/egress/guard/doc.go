// Package guard is the security core of sandbox egress: it turns the host
// a client asked for into one canonical form (Normalize), and decides
// which addresses a sandbox's connection may never reach, whatever any
// policy says (Guard.Check).
//
// Both are security boundaries. A client inside the sandbox picks the
// host text, and names, numbers and IPv6 forms have many spellings for
// one address: 2130706433, 0x7f.1, full-width digits and
// [::ffff:127.0.0.1] all reach loopback. Normalize reads every spelling
// the way the client's own stack would, and Check refuses by a single
// table of ranges (table.go) that a reader can audit.
package guard
