package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/proxy"
)

// ingressDialTimeout bounds the dial of a sandbox port: it is on the
// loopback, so a port that does not answer at once has nothing on it.
const ingressDialTimeout = 5 * time.Second

// serveIngress connects the gateway's upgraded connection to a port a
// program listens on inside the sandbox (see protocol.IngressPath),
// then pipes the two until both directions end.
func (s *Server) serveIngress(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), protocol.IngressUpgrade) {
		http.Error(w, "not an ingress upgrade", http.StatusBadRequest)
		return
	}
	port, err := protocol.ParsePort(r.Header.Get(protocol.IngressPortHeader))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	app, err := dialSandboxPort(r.Context(), port)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		app.Close()
		s.log.Warn("take over an ingress connection", "error", err)
		return
	}
	_, err = fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", protocol.IngressUpgrade)
	if err != nil {
		conn.Close()
		app.Close()
		return
	}
	defer conn.Close()
	defer app.Close()
	// The gateway waits for the 101 before it speaks, but whatever the
	// buffer holds goes first (Relay starts with it).
	proxy.Relay(conn, brw.Reader, app)
}

// dialSandboxPort connects to port on the sandbox's loopback: IPv4
// first, then IPv6 (a dev server that binds "localhost" may take ::1
// only).
func dialSandboxPort(ctx context.Context, port int) (net.Conn, error) {
	d := net.Dialer{Timeout: ingressDialTimeout}
	var errs []error
	for _, host := range []string{"127.0.0.1", "::1"} {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("nothing in the sandbox accepts connections on port %d (on 127.0.0.1 or ::1): start a server there first (bind 127.0.0.1, 0.0.0.0 or ::); %w", port, errors.Join(errs...))
}
