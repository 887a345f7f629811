package clients_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/auth"
)

// memStore is an in-memory auth.ClientStore.
type memStore struct {
	mu      sync.Mutex
	clients map[string]auth.ClientRecord
	err     error // returned by PutClient when set
}

func newMemStore() *memStore { return &memStore{clients: map[string]auth.ClientRecord{}} }

func (s *memStore) PutClient(_ context.Context, c auth.ClientRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.clients[c.ID] = c
	return nil
}

func (s *memStore) GetClient(_ context.Context, id string) (auth.ClientRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return auth.ClientRecord{}, auth.ErrClientNotFound
	}
	return c, nil
}

func (s *memStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// dnsServer is a tiny authoritative DNS server on 127.0.0.1/udp, enough
// for Go's own resolver: one question per query, A and AAAA answers.
// zone maps a name (no trailing dot) to the answers of its first, second,
// ... lookup of each type; the last one repeats. That is how a test makes
// a name resolve to a public address for the fetcher's pre-check and to a
// private one when the dialer looks it up again (DNS rebinding).
type dnsServer struct {
	conn net.PacketConn

	mu      sync.Mutex
	zone    map[string][][]netip.Addr
	lookups map[string]int // by name and type
}

func startDNS(t *testing.T, zone map[string][][]netip.Addr) *dnsServer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: conn, zone: zone, lookups: map[string]int{}}
	t.Cleanup(func() { conn.Close() })
	go s.serve()
	return s
}

// resolver returns a pure-Go resolver that asks only this server.
func (s *dnsServer) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", s.conn.LocalAddr().String())
		},
	}
}

func (s *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := s.answer(buf[:n]); resp != nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

const (
	typeA    = 1
	typeAAAA = 28
)

func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	end := i + 5 // the root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	name := strings.ToLower(strings.Join(labels, "."))

	s.mu.Lock()
	sets, known := s.zone[name]
	var addrs []netip.Addr
	if known && len(sets) > 0 {
		key := fmt.Sprintf("%s/%d", name, qtype)
		addrs = sets[min(s.lookups[key], len(sets)-1)]
		s.lookups[key]++
	}
	s.mu.Unlock()

	var answers []byte
	count := 0
	for _, a := range addrs {
		var rdata []byte
		switch {
		case qtype == typeA && a.Is4():
			b := a.As4()
			rdata = b[:]
		case qtype == typeAAAA && !a.Is4():
			b := a.As16()
			rdata = b[:]
		default:
			continue
		}
		// Name as a pointer to the question, type, class IN, TTL 0.
		answers = binary.BigEndian.AppendUint16(answers, 0xC00C)
		answers = binary.BigEndian.AppendUint16(answers, qtype)
		answers = binary.BigEndian.AppendUint16(answers, 1)
		answers = binary.BigEndian.AppendUint32(answers, 0)
		answers = binary.BigEndian.AppendUint16(answers, uint16(len(rdata)))
		answers = append(answers, rdata...)
		count++
	}
	flags := uint16(0x8580) // response, authoritative, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	resp := append([]byte{}, q[0:2]...)
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, uint16(count))
	resp = binary.BigEndian.AppendUint32(resp, 0) // no authority or additional records
	resp = append(resp, q[12:end]...)
	return append(resp, answers...)
}

// addrs parses addresses for a zone.
func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}
