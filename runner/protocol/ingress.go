package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Ingress: preview ports. A sandbox has no network interface, so a
// connection to a port a program listens on inside it goes the other way
// round from egress: the gateway opens a connection to the runner's
// socket, upgraded from HTTP (IngressPath, with the port in
// IngressPortHeader), and the runner dials that port on the sandbox's
// loopback and pipes the two. One upgraded connection per proxied
// connection: the socket is local, so a dial costs little, and each
// connection gets its own flow control from the kernel.
const (
	// IngressPath is the HTTP path of an ingress upgrade.
	IngressPath = "/v1/ingress"
	// IngressUpgrade is the Upgrade token of an ingress connection.
	IngressUpgrade = "sandgate-ingress"
	// IngressPortHeader names the sandbox port to connect to.
	IngressPortHeader = "Sandgate-Ingress-Port"
	// FeatureIngress: the runner serves IngressPath.
	FeatureIngress = "ingress"
)

// ParsePort parses a TCP port, 1 to 65535, in decimal without signs or
// leading zeros.
func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", s)
	}
	return n, nil
}

// DialIngress opens a connection to port inside the sandbox whose runner
// dial reaches. Nothing listening there is a CodeNotFound error that
// says so.
func DialIngress(ctx context.Context, dial DialFunc, port int) (net.Conn, error) {
	hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	conn, err := dial(hctx)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "connect to runner for a preview port: " + err.Error()}
	}
	up, err := upgradeConn(hctx, conn, IngressPath, IngressUpgrade, IngressPortHeader+": "+strconv.Itoa(port)+"\r\n")
	if err != nil {
		conn.Close()
		return nil, err
	}
	return up, nil
}

// upgradeConn performs an HTTP upgrade of conn to path with token (and
// the extra header lines, each ending in CRLF) by hand, as net/http's
// client would hand back the connection only through a response body,
// and returns the connection to speak the upgraded protocol on.
func upgradeConn(ctx context.Context, conn net.Conn, path, token, extra string) (net.Conn, error) {
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
		defer conn.SetDeadline(time.Time{})
	}
	req := "POST " + path + " HTTP/1.1\r\nHost: runner\r\nConnection: Upgrade\r\nUpgrade: " + token +
		"\r\n" + VersionHeader + ": " + strconv.Itoa(Version) + "\r\n" + extra + "Content-Length: 0\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: token + " upgrade: " + err.Error()}
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, &Error{Code: CodeUnresponsive, Message: fmt.Sprintf("its runner did not answer the %s upgrade within %s", token, HandshakeTimeout)}
		}
		return nil, &Error{Code: CodeUnavailable, Message: token + " upgrade: " + err.Error()}
	}
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols:
	case token == IngressUpgrade && (resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusBadRequest):
		// The runner's own refusal: nothing listens, or a bad port.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, &Error{Code: CodeNotFound, Message: string(body)}
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, &Error{Code: CodeUnsupported, Message: "the sandbox's runner predates " + token + " (" + path + "); a sandbox made by this gateway has it"}
	default:
		return nil, dialError(resp, fmt.Errorf("%s upgrade refused", token))
	}
	resp.Body.Close()
	// The peer may speak right behind its response; what the buffer
	// read of it comes first.
	if n := br.Buffered(); n > 0 {
		ahead, _ := br.Peek(n)
		return &readAheadConn{Conn: conn, ahead: ahead}, nil
	}
	return conn, nil
}
