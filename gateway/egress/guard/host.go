package guard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host is a destination host after normalisation.
type Host struct {
	// Name is the canonical text: lower-case ASCII (IDNA A-labels)
	// without a trailing dot, or for an address literal in any spelling
	// the address's netip text (IP.String()).
	Name string
	// IP is valid only when the host was an address literal.
	IP netip.Addr
}

// maxHostInput bounds the text Normalize will look at. IDNA mapping may
// delete characters (U+00AD SOFT HYPHEN maps to nothing), so the input
// may be longer than the 253-byte name it yields, but not without limit.
const maxHostInput = 1024

// profile maps Unicode names as a browser's lookup does (UTS #46
// non-transitional, as the WHATWG URL standard sets it): case, width and
// compatibility mappings, label validation, the Bidi and joiner rules.
// Hyphens are not checked because real names such as
// r3---sn-abc.googlevideo.com have "--" in the third and fourth places;
// STD3 rules and DNS lengths are left to checkName, which allows "_" and
// gives errors that say what is wrong.
var profile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.ValidateLabels(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(false),
)

// Normalize turns the host a client asked for (a CONNECT authority's
// host, a SOCKS5 domain, a URL's host) into a Host, or an error saying
// what is wrong with it.
//
// IPv6 literals may be bracketed and must not have a zone. A name is
// mapped with IDNA first, so full-width and other Unicode spellings of
// digits and dots are seen as what they map to; then, as in the WHATWG
// URL standard, a name whose last label is a number (decimal, or 0x hex)
// must be an IPv4 address in one of the inet_aton(3) spellings
// (2130706433, 127.1, 0x7f.0.0.1, 0177.0.0.1), because that is what a
// program in the sandbox would connect to; anything else ending in a
// number is an error, never a DNS name.
func Normalize(host string) (Host, error) {
	switch {
	case host == "":
		return Host{}, errors.New("empty host: give a host name or an IP address")
	case len(host) > maxHostInput:
		return Host{}, fmt.Errorf("host of %d bytes is too long: a host name has at most 253 characters", len(host))
	case !utf8.ValidString(host):
		return Host{}, fmt.Errorf("host %q is not valid UTF-8", host)
	case strings.HasPrefix(host, "[") || strings.HasSuffix(host, "]") || strings.Contains(host, ":"):
		return literal6(host)
	}
	ascii, err := profile.ToASCII(host)
	if err != nil {
		return Host{}, fmt.Errorf("host %q is not a valid internationalised name (%v): use its ASCII (xn--) form or check the spelling", host, err)
	}
	name := strings.ToLower(ascii)
	name = strings.TrimSuffix(name, ".") // one trailing dot: the root
	if err := checkLabels(name); err != nil {
		return Host{}, fmt.Errorf("host %q: %w", host, err)
	}
	if ip, numeric, err := parseIPv4(name); numeric {
		if err != nil {
			return Host{}, fmt.Errorf("host %q ends in a number, so it must be an IPv4 address, but %w", host, err)
		}
		return Host{Name: ip.String(), IP: ip}, nil
	}
	if err := checkName(name); err != nil {
		return Host{}, fmt.Errorf("host %q: %w", host, err)
	}
	return Host{Name: name}, nil
}

// literal6 reads an IPv6 literal, bracketed or not. Zones are refused:
// they name this gateway's own interfaces. The address is kept as it is
// (an IPv4-mapped address stays mapped) so that Check sees what was
// asked for.
func literal6(host string) (Host, error) {
	s := host
	if strings.HasPrefix(s, "[") || strings.HasSuffix(s, "]") {
		inner, ok := strings.CutPrefix(s, "[")
		inner, ok2 := strings.CutSuffix(inner, "]")
		if !ok || !ok2 {
			return Host{}, fmt.Errorf("host %q has unbalanced brackets: write an IPv6 address as [2001:db8::1] or bare", host)
		}
		s = inner
	}
	if strings.Contains(s, "%") {
		return Host{}, fmt.Errorf("host %q has an IPv6 zone: zones name the gateway's own interfaces and are not allowed", host)
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is6() {
		return Host{}, fmt.Errorf("host %q is not a valid IPv6 address (a host with \":\" or brackets must be one)", host)
	}
	return Host{Name: ip.String(), IP: ip}, nil
}

// checkLabels refuses empty names and empty labels ("a..b", ".a", "a..").
func checkLabels(name string) error {
	if name == "" {
		return errors.New("empty name: give a host name or an IP address")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return errors.New("empty label: a name may not start with a dot or have two dots in a row (only one trailing dot is allowed)")
		}
	}
	return nil
}

// checkName refuses what IDNA let through but a host name cannot be:
// lengths over the DNS limits and characters outside [a-z0-9-_]. The
// underscore is allowed because real names have it (_acme-challenge).
func checkName(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("name of %d characters is longer than the DNS limit of 253", len(name))
	}
	for label := range strings.SplitSeq(name, ".") {
		if len(label) > 63 {
			return fmt.Errorf("label %.20q... is %d characters, longer than the DNS limit of 63", label, len(label))
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("character %q is not allowed in a host name (letters, digits, '-', '_' and '.' are)", r)
			}
		}
	}
	return nil
}
