package guard

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// parseIPv4 reads the numeric IPv4 spellings inet_aton(3), curl and
// browsers accept: one to four parts, each decimal, octal (a leading 0)
// or hex (0x), the last part filling all the bytes the others leave
// (127.1 is 127.0.0.1, 2130706433 is 127.0.0.1). name is lower-case
// ASCII with no empty labels.
//
// numeric reports whether name must be read as an address at all: as in
// the WHATWG URL standard, that is when its last label is a number. When
// numeric is true and err is not nil, the name is neither an address nor
// a name.
func parseIPv4(name string) (ip netip.Addr, numeric bool, err error) {
	parts := strings.Split(name, ".")
	if !isNumber(parts[len(parts)-1]) {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, fmt.Errorf("it has %d parts; an IPv4 address has at most 4", len(parts))
	}
	var n uint64
	for i, p := range parts {
		v, err := parsePart(p)
		if err != nil {
			return netip.Addr{}, true, err
		}
		if i < len(parts)-1 {
			if v > 255 {
				return netip.Addr{}, true, fmt.Errorf("part %d (%s) is over 255", i+1, p)
			}
			n = n<<8 | v
			continue
		}
		width := 5 - len(parts) // bytes the last part fills
		if v>>(8*width) != 0 {
			return netip.Addr{}, true, fmt.Errorf("last part %s does not fit in %d byte(s)", p, width)
		}
		n = n<<(8*width) | v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true, nil
}

// isNumber reports whether a label is numeric in the WHATWG sense:
// decimal digits, or 0x followed by hex digits or by nothing.
func isNumber(s string) bool {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// parsePart reads one part: 0x hex ("0x" alone is 0, as inet_aton and
// WHATWG read it), 0-prefixed octal, or decimal; at most 2^32-1.
func parsePart(p string) (uint64, error) {
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
		return 0, fmt.Errorf("part %q is not a base-%d number below 2^32", p, base)
	}
	return v, nil
}
