// Package guard decides what a sandbox's network connection may never
// reach, whatever any policy says, and turns the host a client asked for
// into one canonical form. Both are security boundaries: a client inside
// the sandbox picks the host text, and names, numbers and IPv6 forms
// have many spellings for one address.
package guard
