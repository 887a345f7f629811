package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Ports is an inclusive port range; {1, 65535} is any port.
type Ports struct{ Lo, Hi uint16 }

// AnyPort is every port: what a rule without a port allows.
var AnyPort = Ports{1, 65535}

// Contains reports whether port is in the range.
func (p Ports) Contains(port uint16) bool { return p.Lo <= port && port <= p.Hi }

// Within reports whether every port of p is also in q.
func (p Ports) Within(q Ports) bool { return q.Lo <= p.Lo && p.Hi <= q.Hi }

// String is the range as a rule writes it after the colon: "443",
// "8000-8100", or "" for any port (a rule without a port).
func (p Ports) String() string {
	switch {
	case p == AnyPort:
		return ""
	case p.Lo == p.Hi:
		return strconv.Itoa(int(p.Lo))
	}
	return fmt.Sprintf("%d-%d", p.Lo, p.Hi)
}

// parsePorts reads what follows a rule's colon: "443", "1-1024" or "*".
func parsePorts(s string) (Ports, error) {
	if s == "*" {
		return AnyPort, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.ParseUint(lo, 10, 16)
	h, err2 := strconv.ParseUint(hi, 10, 16)
	if err1 != nil || err2 != nil || l == 0 || h < l {
		return Ports{}, fmt.Errorf("bad port %q: want a port 1-65535, a range lo-hi with lo <= hi, or *", s)
	}
	return Ports{uint16(l), uint16(h)}, nil
}
