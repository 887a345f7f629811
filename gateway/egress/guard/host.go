package guard

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Host is a destination host after normalisation.
type Host struct {
	// Name is the canonical text: lower-case ASCII (IDNA A-labels)
	// without a trailing dot, or for an address its netip text.
	Name string
	// IP is set when the host is an address in any spelling.
	IP netip.Addr
}

// profile converts Unicode names the way a browser's lookup would, and
// refuses what no DNS name may hold.
var profile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.BidiRule(),
	idna.ValidateLabels(true), idna.StrictDomainName(false), idna.VerifyDNSLength(true))

// Normalize turns the host a client asked for (a CONNECT authority's
// host, a SOCKS5 name, a URL's host) into a Host, or says what is wrong
// with it. Numeric IPv4 spellings are read as inet_aton(3) and browsers
// read them (2130706433, 127.1, 0x7f.0.0.1, 0177.0.0.1), because that is
// what a program in the sandbox would connect to.
func Normalize(host string) (Host, error) {
	if host == "" {
		return Host{}, errors.New("empty host")
	}
	if strings.HasPrefix(host, "[") || strings.Contains(host, ":") {
		return literal6(host)
	}
	name := strings.ToLower(host)
	if strings.HasSuffix(name, ".") {
		name = name[:len(name)-1]
	}
	if name == "" || strings.HasSuffix(name, ".") || strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
		return Host{}, fmt.Errorf("host %q has an empty label", host)
	}
	if ip, ok, err := numericIPv4(name); ok || err != nil {
		if err != nil {
			return Host{}, fmt.Errorf("host %q: %w", host, err)
		}
		return Host{Name: ip.String(), IP: ip}, nil
	}
	ascii, err := profile.ToASCII(name)
	if err != nil {
		return Host{}, fmt.Errorf("host %q is not a valid name: %v", host, err)
	}
	if err := checkName(ascii); err != nil {
		return Host{}, fmt.Errorf("host %q: %w", host, err)
	}
	return Host{Name: ascii}, nil
}

// literal6 reads an IPv6 literal, bracketed or not. Zones are refused:
// they name this host's interfaces.
func literal6(host string) (Host, error) {
	s := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.Contains(s, "%") {
		return Host{}, fmt.Errorf("host %q: IPv6 zones are not allowed", host)
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is6() {
		return Host{}, fmt.Errorf("host %q is not a valid IPv6 address", host)
	}
	return Host{Name: ip.String(), IP: ip}, nil
}

// checkName refuses what IDNA let through but a host name cannot be.
func checkName(name string) error {
	if len(name) > 253 {
		return errors.New("name longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("label %q must be 1 to 63 characters", label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("character %q is not allowed in a host name", r)
			}
		}
	}
	return nil
}

// numericIPv4 reads the inet_aton forms: one to four parts, each decimal,
// octal (leading 0) or hex (0x), the last part filling the remaining
// bytes. It reports ok false for a name that is not numeric at all. As in
// WHATWG URL parsing, a host whose last label is numeric must be an
// address: anything else is an error, never a name to resolve.
func numericIPv4(name string) (netip.Addr, bool, error) {
	parts := strings.Split(name, ".")
	if !isNumber(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, errors.New("more than four numeric parts")
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := parseInetPart(p)
		if err != nil {
			return netip.Addr{}, true, err
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, true, fmt.Errorf("part %d (%d) exceeds 255", i+1, v)
		}
		n = n<<8 | v
	}
	rest := 5 - len(vals) // bytes the last part fills
	last := vals[len(vals)-1]
	if last >= 1<<(8*rest) {
		return netip.Addr{}, true, fmt.Errorf("last part %d does not fit in %d bytes", last, rest)
	}
	n = n<<(8*rest) | last
	b := [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	return netip.AddrFrom4(b), true, nil
}

// isNumber reports whether a label looks numeric: decimal digits, or 0x
// followed by hex digits (or nothing, which inet_aton reads as 0).
func isNumber(s string) bool {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func parseInetPart(p string) (uint64, error) {
	base, digits := 10, p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, nil
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, fmt.Errorf("numeric part %q is not a valid base-%d number below 2^32", p, base)
	}
	return v, nil
}
