package egress_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/egress/guard"
	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/runner/protocol"
)

// harness is a Service serving one Gate over an in-memory yamux session,
// with the runner's end in the test's hands.
type harness struct {
	runner  *yamux.Session
	gate    *egress.Gate
	mu      sync.Mutex
	records []egress.Record
}

type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func newHarness(t *testing.T, allow, ceiling []string, loopback map[uint16]uint16, limits egress.Limits) *harness {
	t.Helper()
	h := &harness{}
	a, err := policy.ParseRules(allow)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policy.ParseRules(ceiling)
	if err != nil {
		t.Fatal(err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	svc := egress.NewService(egress.Options{
		Guard:    guard.New(nil),
		Resolver: mapResolver{"ok.test": {lo}, "other.test": {lo}, "private.test": {netip.MustParseAddr("192.168.1.1")}, "two.test": {netip.MustParseAddr("10.0.0.1"), lo}},
		Ceiling:  func(string) policy.Rules { return c },
		Record: func(r egress.Record) {
			h.mu.Lock()
			h.records = append(h.records, r)
			h.mu.Unlock()
		},
		Testing: &egress.Testing{Loopback: loopback},
	})
	h.gate = egress.NewGate("sb1", "tenant", identity.Identity{Subject: "who"}, a, limits)
	gwEnd, runnerEnd := net.Pipe()
	gwSess, err := yamux.Client(gwEnd, protocol.YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	if h.runner, err = yamux.Server(runnerEnd, protocol.YamuxConfig()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Serve(ctx, gwSess, h.gate); close(done) }()
	t.Cleanup(func() { cancel(); h.runner.Close(); <-done })
	return h
}

// open asks for a connection as the runner would.
func (h *harness) open(t *testing.T, kind, host string, port uint16) (protocol.EgressVerdict, net.Conn) {
	t.Helper()
	st, err := h.runner.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.WriteEgressFrame(st, protocol.EgressOpen{Kind: kind, Host: host, Port: port}); err != nil {
		t.Fatal(err)
	}
	var v protocol.EgressVerdict
	if err := protocol.ReadEgressFrame(st, &v); err != nil {
		t.Fatal(err)
	}
	return v, st
}

func (h *harness) waitRecords(t *testing.T, n int) []egress.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		got := append([]egress.Record(nil), h.records...)
		h.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func portOf(t *testing.T, addr string) uint16 {
	t.Helper()
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

func TestDecisions(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	h := newHarness(t, []string{"ok.test:80", "*.ok.test", "private.test", "two.test"}, []string{"ok.test", "*.ok.test", "private.test", "two.test"},
		map[uint16]uint16{80: portOf(t, echo)}, egress.Limits{})
	cases := []struct {
		name, kind, host string
		port             uint16
		status           int
		reason           string
	}{
		{"allowed", "connect", "OK.test.", 80, 200, ""},
		{"wrong port", "connect", "ok.test", 81, 403, "allowlist"},
		{"not listed", "connect", "other.test", 80, 403, "allowlist (ok.test:80"},
		{"resolves to private", "connect", "private.test", 80, 403, "private"},
		{"first address private, second allowed", "connect", "two.test", 80, 200, ""},
		{"loopback literal", "connect", "127.0.0.1", 80, 403, "loopback"},
		{"numeric loopback", "socks5", "2130706433", 80, 403, "loopback"},
		{"metadata", "http", "169.254.169.254", 80, 403, "link-local"},
		{"mapped", "connect", "::ffff:127.0.0.1", 80, 403, "IPv4-mapped"},
		{"bad host", "connect", "a..b", 80, 400, "invalid host"},
		{"bad kind", "udp", "ok.test", 80, 400, "unknown proxy kind"},
		{"no such host", "connect", "sub.ok.test", 80, 502, "does not resolve"},
	}
	for _, tc := range cases {
		v, st := h.open(t, tc.kind, tc.host, tc.port)
		st.Close()
		if v.Status != tc.status || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: verdict %+v, want %d with %q", tc.name, v, tc.status, tc.reason)
		}
	}
	recs := h.waitRecords(t, len(cases))
	if len(recs) != len(cases) {
		t.Fatalf("%d records for %d connections", len(recs), len(cases))
	}
	for _, r := range recs {
		if r.SandboxID != "sb1" || r.Tenant != "tenant" || r.Principal.Subject != "who" || r.Status == 0 {
			t.Errorf("record %+v lacks who or what", r)
		}
	}
}

func TestCeilingAndLiveChanges(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	h := newHarness(t, []string{"ok.test"}, []string{"other.test"}, map[uint16]uint16{80: portOf(t, echo)}, egress.Limits{})
	if v, _ := h.open(t, "connect", "ok.test", 80); v.Status != 403 || !strings.Contains(v.Reason, "operator permits") {
		t.Errorf("allowed by the sandbox, not by the ceiling: %+v", v)
	}
	rules, _ := policy.ParseRules([]string{"other.test"})
	h.gate.SetAllow(rules)
	if v, _ := h.open(t, "connect", "other.test", 80); v.Status != 200 {
		t.Errorf("after SetAllow: %+v", v)
	}
	h.gate.SetAllow(nil)
	if v, _ := h.open(t, "connect", "other.test", 80); v.Status != 403 || !strings.Contains(v.Reason, "allowlist is empty") {
		t.Errorf("after SetAllow(nil): %+v", v)
	}
}

func TestPipesAndCounts(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	h := newHarness(t, []string{"ok.test"}, []string{"ok.test"}, map[uint16]uint16{80: portOf(t, echo)}, egress.Limits{})
	v, st := h.open(t, "connect", "ok.test", 80)
	if v.Status != 200 {
		t.Fatalf("verdict %+v", v)
	}
	payload := strings.Repeat("x", 3<<20)
	go io.WriteString(st, payload)
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(st, got); err != nil || string(got) != payload {
		t.Fatalf("echo of 3 MiB: %v", err)
	}
	st.Close()
	recs := h.waitRecords(t, 1)
	if len(recs) != 1 || recs[0].BytesUp != int64(len(payload)) || recs[0].BytesDown != int64(len(payload)) || recs[0].IP != "127.0.0.1" || recs[0].Rule != "ok.test" {
		t.Errorf("record %+v", recs)
	}
}

func TestSNI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls ok") }))
	defer srv.Close()
	h := newHarness(t, []string{"ok.test", "other.test"}, []string{"ok.test", "other.test"}, map[uint16]uint16{443: portOf(t, srv.Listener.Addr().String())}, egress.Limits{})

	for _, tc := range []struct {
		sni  string
		want bool
	}{{"ok.test", true}, {"OK.Test", true}, {"other.test", false}, {"", false}} {
		v, st := h.open(t, "connect", "ok.test", 443)
		if v.Status != 200 {
			t.Fatalf("verdict %+v", v)
		}
		conn := tls.Client(st, &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true})
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		err := conn.Handshake()
		if ok := err == nil; ok != tc.want {
			t.Errorf("SNI %q: handshake error %v, want success %v", tc.sni, err, tc.want)
		}
		if !tc.want && (err == nil || !strings.Contains(err.Error(), "access denied")) {
			t.Errorf("SNI %q: %v, want a TLS access_denied alert", tc.sni, err)
		}
		conn.Close()
	}
	recs := h.waitRecords(t, 4)
	denied := 0
	for _, r := range recs {
		if r.Refused != "" {
			denied++
			if r.Status != 403 || !strings.Contains(r.Refused, "server name") && !strings.Contains(r.Refused, "ClientHello") {
				t.Errorf("refused record %+v", r)
			}
		}
	}
	if denied != 2 {
		t.Errorf("%d refused records, want 2: %+v", denied, recs)
	}
}

func TestPlainHTTPIsForwardedByTheGateway(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host="+r.Host+" uri="+r.RequestURI+" proxy-auth="+r.Header.Get("Proxy-Authorization"))
	}))
	defer srv.Close()
	h := newHarness(t, []string{"ok.test"}, []string{"ok.test"}, map[uint16]uint16{80: portOf(t, srv.Listener.Addr().String())}, egress.Limits{})

	v, st := h.open(t, "http", "ok.test", 80)
	if v.Status != 200 {
		t.Fatalf("verdict %+v", v)
	}
	io.WriteString(st, "GET http://ok.test/a?b=1 HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: secret\r\n\r\nGET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	st.SetDeadline(time.Now().Add(10 * time.Second))
	out, _ := io.ReadAll(st)
	if !strings.Contains(string(out), "host=ok.test uri=/a?b=1 proxy-auth=") || strings.Contains(string(out), "secret") || strings.Count(string(out), "HTTP/1.1 200") != 1 {
		t.Errorf("response %q: want one answer, for ok.test in origin form, without proxy headers", out)
	}

	v, st = h.open(t, "http", "ok.test", 80)
	if v.Status != 200 {
		t.Fatalf("verdict %+v", v)
	}
	io.WriteString(st, "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n")
	st.SetDeadline(time.Now().Add(10 * time.Second))
	out, _ = io.ReadAll(st)
	if !strings.HasPrefix(string(out), "HTTP/1.1 403") || !strings.Contains(string(out), "other.test") {
		t.Errorf("a request for another host than allowed: %q, want 403", out)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	echo := echoServer(t)
	h := newHarness(t, []string{"ok.test"}, []string{"ok.test"}, map[uint16]uint16{80: portOf(t, echo)},
		egress.Limits{MaxConns: 1, BytesPerMinute: 64 << 10, IdleTimeout: time.Second})
	v, first := h.open(t, "connect", "ok.test", 80)
	if v.Status != 200 {
		t.Fatalf("first: %+v", v)
	}
	if v, _ := h.open(t, "connect", "ok.test", 80); v.Status != 429 || !strings.Contains(v.Reason, "limit 1") {
		t.Errorf("second while the first is open: %+v, want 429", v)
	}
	// Over the byte budget: the connection is cut.
	go first.Write(make([]byte, 128<<10))
	first.SetDeadline(time.Now().Add(10 * time.Second))
	n, _ := io.Copy(io.Discard, first)
	if n > 64<<10 {
		t.Errorf("%d bytes came back through a 64 KiB budget", n)
	}
	recs := h.waitRecords(t, 2)
	var cut bool
	for _, r := range recs {
		cut = cut || strings.Contains(r.Closed, "budget")
	}
	if !cut {
		t.Errorf("no record says the budget cut the connection: %+v", recs)
	}
}

func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}
