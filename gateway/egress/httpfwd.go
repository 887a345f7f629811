package egress

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

// maxRequestHead bounds the head of a proxied plain-HTTP request.
const maxRequestHead = 64 << 10

// forwardHTTP serves a plain-HTTP request the sandbox sent as an
// absolute URI. The gateway, not the runner, reads it, so the URL and Host
// that reach the server are the ones the policy allowed; it goes out in
// origin form with "Connection: close", one request per connection. The
// response, and anything after, is then piped back as is.
func forwardHTTP(stream, dest net.Conn, t target, m *meter, idle time.Duration) error {
	lr := &io.LimitedReader{R: meteredReader{stream, m, &m.up}, N: maxRequestHead}
	br := bufio.NewReader(lr)
	_ = stream.SetReadDeadline(time.Now().Add(helloTimeout))
	req, err := http.ReadRequest(br)
	_ = stream.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("read the proxied request: %w", err)
	}
	if err := sameDestination(req, t); err != nil {
		answer(stream, http.StatusForbidden, err.Error())
		return err
	}
	lr.N = math.MaxInt64 // the body is not bounded here; the budget is
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"} {
		req.Header.Del(h)
	}
	req.Close = true
	req.RequestURI = ""
	bw := bufio.NewWriter(dest)
	if err := req.Write(bw); err != nil {
		return fmt.Errorf("send the request: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("send the request: %w", err)
	}
	// Only the response comes back. Nothing more goes up: whatever the
	// client sends after its one request (a pipelined second one, with
	// another Host) would reach a server it was not checked for.
	pipe(stream, dest, m, idle, false)
	return nil
}

// sameDestination checks that the request targets the host and port the
// connection was allowed for.
func sameDestination(req *http.Request, t target) error {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		return fmt.Errorf("sandgate egress: the request must name an http:// URL, got %q", req.RequestURI)
	}
	port := uint16(80)
	if p := req.URL.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fmt.Errorf("sandgate egress: bad port in %q", req.URL.Host)
		}
		port = uint16(n)
	}
	h, err := guard.Normalize(req.URL.Hostname())
	if err != nil || h.Name != t.host.Name || port != t.port {
		return fmt.Errorf("sandgate egress refused %s: the request was for %s", req.URL.Host, t.addr())
	}
	return nil
}

// answer writes a short plain-text HTTP response that ends the connection.
func answer(w io.Writer, status int, text string) {
	body := strings.TrimSpace(text) + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Sandgate-Egress: refused\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}
