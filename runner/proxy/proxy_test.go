package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	xproxy "golang.org/x/net/proxy"

	"github.com/sandgate/sandgate/runner/proxy"
)

// opener is an Opener for tests: it records what was asked and connects
// to target (a loopback server) or refuses.
type opener struct {
	mu     sync.Mutex
	asked  []proxy.Dest
	target string         // host:port to connect every request to
	refuse *proxy.Refusal // when set, refuse everything
	// forward, when set, is given the tunnel's far end instead of
	// connecting to target.
	forward func(net.Conn)
}

func (o *opener) Open(ctx context.Context, d proxy.Dest) (net.Conn, error) {
	o.mu.Lock()
	o.asked = append(o.asked, d)
	o.mu.Unlock()
	if o.refuse != nil {
		return nil, o.refuse
	}
	if o.forward != nil {
		near, far := net.Pipe()
		go o.forward(far)
		return near, nil
	}
	var dialer net.Dialer
	return dialer.DialContext(ctx, "tcp", o.target)
}

func (o *opener) last() proxy.Dest {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.asked) == 0 {
		return proxy.Dest{}
	}
	return o.asked[len(o.asked)-1]
}

// serve starts a proxy Server with o on a loopback port.
func serve(t *testing.T, o proxy.Opener, tweak func(*proxy.Server)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &proxy.Server{Open: o}
	if tweak != nil {
		tweak(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
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

func TestConnectForwardsEarlyData(t *testing.T) {
	t.Parallel()
	o := &opener{target: echoServer(t)}
	conn, err := net.Dial("tcp", serve(t, o, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The request and the first bytes of the tunnel in one write.
	io.WriteString(conn, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nearly bytes")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got := make([]byte, len("early bytes"))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "early bytes" {
		t.Fatalf("echo of the early bytes: %q %v", got, err)
	}
	if d := o.last(); d != (proxy.Dest{Kind: proxy.KindConnect, Host: "example.com", Port: 443}) {
		t.Errorf("asked %+v", d)
	}
}

func TestAbsoluteURIPassesTheRawHead(t *testing.T) {
	t.Parallel()
	raw := "POST http://Example.com:8080/p?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nX-Odd:  spaced \r\nContent-Length: 4\r\n\r\nbody"
	got := make(chan string, 1)
	o := &opener{forward: func(far net.Conn) {
		defer far.Close()
		buf := make([]byte, len(raw))
		io.ReadFull(far, buf)
		got <- string(buf)
		io.WriteString(far, "HTTP/1.1 204 No Content\r\n\r\n")
	}}
	conn, err := net.Dial("tcp", serve(t, o, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, raw)
	if g := <-got; g != raw {
		t.Errorf("tunnel got %q, want the client's bytes exactly", g)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("response: %v %v", resp, err)
	}
	if d := o.last(); d != (proxy.Dest{Kind: proxy.KindHTTP, Host: "Example.com", Port: 8080}) {
		t.Errorf("asked %+v", d)
	}
}

func TestGoClientsThroughTheProxy(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain "+r.URL.Path) }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure "+r.URL.Path) }))
	defer secure.Close()

	// The plain server is reached through a tunnel that does what the
	// gateway does: read the request and send it in origin form.
	o := &opener{forward: func(far net.Conn) {
		defer far.Close()
		req, err := http.ReadRequest(bufio.NewReader(far))
		if err != nil {
			return
		}
		req.RequestURI, req.URL.Host, req.URL.Scheme = "", plain.Listener.Addr().String(), "http"
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return
		}
		resp.Write(far)
	}}
	addr := serve(t, o, nil)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}}
	resp, err := client.Get("http://plain.example/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "plain /x" {
		t.Errorf("plain through the proxy: %q", body)
	}

	o2 := &opener{target: secure.Listener.Addr().String()}
	addr2 := serve(t, o2, nil)
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr2}), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	resp, err = (&http.Client{Transport: tr}).Get("https://secure.example/y")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secure /y" || o2.last().Kind != proxy.KindConnect || o2.last().Port != 443 {
		t.Errorf("https through the proxy: %q, asked %+v", body, o2.last())
	}

	dialer, err := xproxy.SOCKS5("tcp", addr2, nil, xproxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	tr3 := &http.Transport{DialContext: dialer.(xproxy.ContextDialer).DialContext, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	resp, err = (&http.Client{Transport: tr3}).Get("https://socks.example/z")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secure /z" || o2.last() != (proxy.Dest{Kind: proxy.KindSOCKS, Host: "socks.example", Port: 443}) {
		t.Errorf("socks5: %q, asked %+v", body, o2.last())
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	o := &opener{refuse: &proxy.Refusal{Status: http.StatusForbidden, Reason: "sandgate egress to evil.example:80 refused: not allowed"}}
	addr := serve(t, o, nil)
	cases := []struct{ name, send, status, body string }{
		{"policy", "GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", "403", "not allowed"},
		{"policy on CONNECT", "CONNECT evil.example:443 HTTP/1.1\r\n\r\n", "403", "not allowed"},
		{"origin form", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "400", "egress proxy"},
		{"https URI", "GET https://x.example/ HTTP/1.1\r\n\r\n", "400", "CONNECT"},
		{"CONNECT without port", "CONNECT x.example HTTP/1.1\r\n\r\n", "400", "host:port"},
		{"head too large", "GET http://x.example/ HTTP/1.1\r\nX: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", "431", "64 KiB"},
	}
	for _, tc := range cases {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, tc.send)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		out, _ := io.ReadAll(conn)
		conn.Close()
		if !strings.HasPrefix(string(out), "HTTP/1.1 "+tc.status) || !strings.Contains(string(out), tc.body) {
			t.Errorf("%s: got %q, want status %s and %q", tc.name, out, tc.status, tc.body)
		}
		if tc.status == "403" && !strings.Contains(string(out), "X-Sandgate-Egress: refused") {
			t.Errorf("%s: refusal lacks its header: %q", tc.name, out)
		}
	}
}

func TestSOCKSReplies(t *testing.T) {
	t.Parallel()
	addr := serve(t, &opener{refuse: &proxy.Refusal{Status: http.StatusForbidden, Reason: "no"}}, nil)
	cases := []struct {
		name  string
		send  []byte
		reply []byte
	}{
		{"refused by policy", []byte{5, 1, 0, 5, 1, 0, 3, 4, 'x', '.', 'i', 'o', 0, 80}, []byte{5, 0, 5, 2}},
		{"bind", []byte{5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80}, []byte{5, 0, 5, 7}},
		{"udp associate", []byte{5, 1, 0, 5, 3, 0, 1, 1, 2, 3, 4, 0, 80}, []byte{5, 0, 5, 7}},
		{"unknown address type", []byte{5, 1, 0, 5, 1, 0, 9}, []byte{5, 0, 5, 8}},
		{"password auth only", []byte{5, 1, 2}, []byte{5, 0xff}},
	}
	for _, tc := range cases {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(tc.send)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		got := make([]byte, len(tc.reply))
		_, err = io.ReadFull(conn, got)
		conn.Close()
		if err != nil || string(got) != string(tc.reply) {
			t.Errorf("%s: reply % x (%v), want % x", tc.name, got, err, tc.reply)
		}
	}
}

func TestSlowClientTimesOut(t *testing.T) {
	t.Parallel()
	addr := serve(t, &opener{}, func(s *proxy.Server) { s.HandshakeTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "CONNECT x.example:443 HTTP/1.1\r\n") // and never the blank line
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read after the handshake timeout: %d, %v; want EOF (closed by the proxy)", n, err)
	}
}

func TestMaxConns(t *testing.T) {
	t.Parallel()
	o := &opener{target: echoServer(t)}
	addr := serve(t, o, func(s *proxy.Server) { s.MaxConns = 1 })
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	io.WriteString(first, "CONNECT a.example:1 HTTP/1.1\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(first), &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first: %v %v", resp, err)
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	io.WriteString(second, "CONNECT b.example:1 HTTP/1.1\r\n\r\n")
	second.SetDeadline(time.Now().Add(10 * time.Second))
	out, _ := io.ReadAll(second)
	if !strings.HasPrefix(string(out), "HTTP/1.1 503") || !strings.Contains(string(out), "too many") {
		t.Errorf("second connection: %q, want 503", out)
	}
}
