package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
)

// The egress proxy's speed, on the in-process provider: a client on
// loopback speaks to the runner's proxy, the runner tunnels to the
// gateway over its socket, the gateway dials a server on loopback. This
// is the path a container's programs take, less the network namespace.

// egressBench starts a gateway whose session sandbox may reach the test
// world, and returns the runner's proxy address.
func egressBench(b *testing.B) (proxyAddr string, world *egressWorld) {
	b.Helper()
	world = newEgressWorld(b)
	tg := startLocalGateway(b, func(c *gateway.Config) {
		world.configure(b, c, egressCeiling...)
		// A benchmark moves more, and opens connections faster, than a
		// sandbox's defaults allow.
		c.Egress.Limits.BytesPerMinute = 1 << 50
		c.Egress.Limits.ConnsPerMinute = 1 << 30
	})
	c := legacyClient(b, tg.URL)
	r, _ := shell(b, c, "echo $HTTP_PROXY", nil)
	u, err := url.Parse(strings.TrimSpace(r.Stdout))
	if err != nil || u.Host == "" {
		b.Fatalf("the sandbox's HTTP_PROXY: %q", r.Stdout)
	}
	return u.Host, world
}

// tunnel opens a CONNECT tunnel through the proxy.
func benchTunnel(b *testing.B, proxyAddr, dest string) (net.Conn, *bufio.Reader) {
	conn, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		b.Fatal(err)
	}
	io.WriteString(conn, "CONNECT "+dest+" HTTP/1.1\r\nHost: "+dest+"\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT %s: %v %v", dest, resp, err)
	}
	return conn, br
}

// BenchmarkEgressThroughput downloads 256 MiB per iteration over one
// proxied connection.
func BenchmarkEgressThroughput(b *testing.B) {
	proxyAddr, _ := egressBench(b)
	const size = 256 << 20
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		conn, br := benchTunnel(b, proxyAddr, "bulk.allowed.test:80")
		io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: bulk.allowed.test\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.CopyN(io.Discard, resp.Body, size)
		if err != nil || n != size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		conn.Close()
	}
}

// BenchmarkEgressOpen measures opening a connection through the proxy:
// CONNECT, the gateway's decision and dial, and one echo round trip; the
// "direct-ms" metric is the same dial and round trip without the proxy,
// so the difference is the time the proxy adds.
func BenchmarkEgressOpen(b *testing.B) {
	proxyAddr, world := egressBench(b)
	direct := world.HTTP.Listener.Addr().String()
	req := "GET /hello HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
	start := time.Now()
	const directRounds = 200
	for range directRounds {
		conn, err := net.Dial("tcp", direct)
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(conn, req)
		if _, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil {
			b.Fatal(err)
		}
		conn.Close()
	}
	directMs := float64(time.Since(start).Microseconds()) / directRounds / 1000
	var took, opened []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		conn, br := benchTunnel(b, proxyAddr, "allowed.test:80")
		opened = append(opened, time.Since(start))
		io.WriteString(conn, req)
		if _, err := http.ReadResponse(br, nil); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		conn.Close()
	}
	slices.Sort(took)
	slices.Sort(opened)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(opened[len(opened)/2].Microseconds())/1000, "connect-p50-ms")
	b.ReportMetric(directMs, "direct-ms")
}
