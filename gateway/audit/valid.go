package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/auth/identity"
)

// Every string of a record is valid UTF-8 before the record is sealed.
// encoding/json writes an invalid byte as the escape \ufffd, but a
// verifier decodes that escape to U+FFFD and encodes the character back
// as its three raw bytes: the line it expects is not the line written,
// and the chain would read as broken from that record on. Strings reach
// a record from tokens, URL paths, tool arguments and a sandbox's
// ClientHello, so any of them may hold invalid bytes. prepare replaces
// each run of them with U+FFFD (strings.ToValidUTF8), the one rule the
// writer and every verifier then share.
//
// The fix-ups are methods per struct rather than reflection: Append is on
// every tool call's path, and for the usual, already valid, event they
// cost one utf8.ValidString per string and allocate nothing.
// FuzzAppendVerify fills every string field by reflection, so a field
// added to Event and forgotten here fails it.

// Backstop caps applied by Append, in characters (runes).
const (
	maxSummaryValue = 200
	maxErrorText    = 1000
)

// prepare checks the caller's part of e, makes its strings valid UTF-8
// and applies the backstop caps. A map, slice or Connection that needs a
// change is replaced by a changed copy, so what the caller shares
// elsewhere (a principal's scopes, one summary for tool.start and
// tool.end) is never modified.
func prepare(e *Event) error {
	if e == nil {
		return fmt.Errorf("%w: nil event", ErrInvalid)
	}
	if !e.Kind.Valid() {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalid, e.Kind)
	}
	if !validOutcome(e.Outcome) {
		return fmt.Errorf("%w: unknown outcome %q", ErrInvalid, e.Outcome)
	}
	e.Principal = validPrincipal(e.Principal)
	for _, s := range []*string{&e.Session, &e.SandboxID, &e.ContainerID, &e.Tool, &e.RequestID, &e.ArgsDigest} {
		*s = validString(*s)
	}
	e.Summary = validSummary(e.Summary)
	e.Error = cut(validString(e.Error), maxErrorText)
	e.DenyReason = cut(validString(e.DenyReason), maxErrorText)
	e.Connection = e.Connection.valid()
	return nil
}

// validString returns s with each run of invalid UTF-8 bytes replaced by
// U+FFFD; s itself when it is valid.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// validPrincipal returns p with valid strings; its Scopes are a new
// slice when a scope had to change. Audience and the token times are not
// part of the record (identity.Identity leaves them out of its JSON).
func validPrincipal(p identity.Identity) identity.Identity {
	p.Issuer, p.Subject = validString(p.Issuer), validString(p.Subject)
	p.Tenant, p.ClientID = validString(p.Tenant), validString(p.ClientID)
	for i, s := range p.Scopes {
		if !utf8.ValidString(s) {
			scopes := slices.Clone(p.Scopes)
			for j := i; j < len(scopes); j++ {
				scopes[j] = validString(scopes[j])
			}
			p.Scopes = scopes
			break
		}
	}
	return p
}

// validSummary returns m, or a copy with valid keys and values and values
// cut to maxSummaryValue. Two keys that differ only in invalid bytes
// become one: the value of the first in byte order is kept, so the record
// does not depend on the order in which the map is walked.
func validSummary(m map[string]string) map[string]string {
	clean := true
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) || len(v) > maxSummaryValue && utf8.RuneCountInString(v) > maxSummaryValue {
			clean = false
			break
		}
	}
	if clean {
		return m
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		vk := validString(k)
		if _, dup := out[vk]; !dup {
			out[vk] = cut(validString(m[k]), maxSummaryValue)
		}
	}
	return out
}

// valid returns c, or a copy with valid strings when one was not; nil
// for nil.
func (c *Connection) valid() *Connection {
	if c == nil {
		return nil
	}
	fields := func(c *Connection) []*string {
		return []*string{&c.Proxy, &c.Asked, &c.Host, &c.SNI, &c.IP, &c.Rule, &c.Closed}
	}
	for _, s := range fields(c) {
		if !utf8.ValidString(*s) {
			cp := *c
			for _, s := range fields(&cp) {
				*s = validString(*s)
			}
			return &cp
		}
	}
	return c
}

// cut returns s if it has at most n runes, and otherwise its first n-1
// runes followed by "…".
func cut(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}
