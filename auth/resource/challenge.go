package resource

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 9110 §11.6.1).
type Challenge struct {
	// Scheme is the auth-scheme as written; compare it with
	// strings.EqualFold.
	Scheme string
	// Params maps lowercased parameter names to their unquoted values.
	// A token68 challenge ("Negotiate abc==") keeps the token68 under the
	// empty name.
	Params map[string]string
}

// paramOrder puts the parameters clients look at first in front; the rest
// follow sorted so that rendering is deterministic.
var paramOrder = []string{"realm", "error", "error_description", "scope", "resource_metadata"}

// String renders c as it appears in a WWW-Authenticate header. Every
// parameter value is sent as a quoted-string; characters that no header
// may carry (controls other than tab) are replaced by a space so that a
// value can never split or end the header. Names that are not tokens are
// left out.
func (c Challenge) String() string {
	var b strings.Builder
	b.WriteString(c.Scheme)
	if t68, ok := c.Params[""]; ok && isB64Token(t68) {
		b.WriteString(" " + t68)
		return b.String()
	}
	names := make([]string, 0, len(c.Params))
	for n := range c.Params {
		if n != "" && isToken(n) && !slices.Contains(paramOrder, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	sep := " "
	for _, n := range append(slices.Clone(paramOrder), names...) {
		v, ok := c.Params[n]
		if !ok {
			continue
		}
		b.WriteString(sep + n + "=" + quote(v))
		sep = ", "
	}
	return b.String()
}

func quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 && c != '\t' || c == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ParseChallenges parses a WWW-Authenticate header value into its
// challenges. It follows RFC 9110: challenges and parameters are separated
// by commas (empty list elements are allowed), values are tokens or
// quoted-strings with backslash escapes, and parameter names are
// case-insensitive and may not repeat within a challenge. An empty value
// yields no challenges. Several header lines should be joined with ", "
// before parsing.
func ParseChallenges(header string) ([]Challenge, error) {
	p := &challengeParser{s: header}
	var out []Challenge
	p.skipSeparators()
	for !p.done() {
		c, err := p.challenge()
		if err != nil {
			return nil, fmt.Errorf("parse WWW-Authenticate at byte %d: %w", p.i, err)
		}
		out = append(out, c)
		p.skipSeparators()
	}
	return out, nil
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

func (p *challengeParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

// skipOWS skips spaces and tabs and reports whether it skipped any.
func (p *challengeParser) skipOWS() bool {
	start := p.i
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	return p.i > start
}

// skipSeparators skips whitespace and the commas of empty list elements.
func (p *challengeParser) skipSeparators() {
	for p.skipOWS() || p.peek() == ',' {
		if p.peek() == ',' {
			p.i++
		}
	}
}

func (p *challengeParser) token() string {
	start := p.i
	for !p.done() && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// challenge parses auth-scheme [ 1*SP ( token68 / #auth-param ) ].
func (p *challengeParser) challenge() (Challenge, error) {
	c := Challenge{Scheme: p.token(), Params: map[string]string{}}
	if c.Scheme == "" {
		return c, errors.New("expected an auth-scheme")
	}
	spaced := p.skipOWS()
	if p.done() || p.peek() == ',' {
		return c, p.moreParams(c)
	}
	if !spaced {
		return c, errors.New("expected a space after the auth-scheme")
	}
	if t68, ok := p.token68(); ok {
		c.Params[""] = t68
		return c, nil
	}
	if err := p.param(c); err != nil {
		return c, err
	}
	return c, p.moreParams(c)
}

// token68 consumes a token68 if one stands here alone, that is, followed by
// the end or a comma; otherwise it consumes nothing.
func (p *challengeParser) token68() (string, bool) {
	start := p.i
	for !p.done() && isToken68Char(p.s[p.i]) {
		p.i++
	}
	for !p.done() && p.s[p.i] == '=' {
		p.i++
	}
	end := p.i
	p.skipOWS()
	if end > start && (p.done() || p.peek() == ',') && isB64Token(p.s[start:end]) {
		return p.s[start:end], true
	}
	p.i = start
	return "", false
}

// moreParams parses ", name=value" elements until the next element starts a
// new challenge (a token not followed by "=") or the header ends.
func (p *challengeParser) moreParams(c Challenge) error {
	for {
		mark := p.i
		p.skipSeparators()
		if p.done() {
			return nil
		}
		if p.i == mark {
			return fmt.Errorf("expected a comma, found %q", p.peek())
		}
		next := p.i
		p.token()
		p.skipOWS()
		isParam := p.peek() == '='
		p.i = next
		if !isParam {
			return nil
		}
		if err := p.param(c); err != nil {
			return err
		}
	}
}

// param parses auth-param = token BWS "=" BWS ( token / quoted-string ).
func (p *challengeParser) param(c Challenge) error {
	name := strings.ToLower(p.token())
	if name == "" {
		return errors.New("expected a parameter name")
	}
	p.skipOWS()
	if p.peek() != '=' {
		return fmt.Errorf("expected '=' after parameter %q", name)
	}
	p.i++
	p.skipOWS()
	var value string
	if p.peek() == '"' {
		v, err := p.quoted()
		if err != nil {
			return err
		}
		value = v
	} else if value = p.token(); value == "" {
		return fmt.Errorf("parameter %q has no value", name)
	}
	if _, dup := c.Params[name]; dup {
		return fmt.Errorf("parameter %q repeated", name)
	}
	c.Params[name] = value
	p.skipOWS()
	return nil
}

// quoted parses a quoted-string and returns its unescaped content.
func (p *challengeParser) quoted() (string, error) {
	var b strings.Builder
	for p.i++; !p.done(); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			p.i++
			if p.done() || !isQuotedPairChar(p.s[p.i]) {
				return "", errors.New("bad escape in quoted-string")
			}
			b.WriteByte(p.s[p.i])
		case isQDText(c):
			b.WriteByte(c)
		default:
			return "", fmt.Errorf("byte %#x not allowed in quoted-string", c)
		}
	}
	return "", errors.New("unterminated quoted-string")
}

// isQDText: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text.
func isQDText(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || 0x23 <= c && c <= 0x5b || 0x5d <= c && c <= 0x7e || c >= 0x80
}

// isQuotedPairChar: HTAB / SP / VCHAR / obs-text.
func isQuotedPairChar(c byte) bool { return c == '\t' || 0x20 <= c && c != 0x7f }

func isTokenChar(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}
