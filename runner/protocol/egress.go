package protocol

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/yamux"
)

// Egress. A sandbox has no network interface; its runner proxies what the
// sandbox's programs ask for to the gateway, which decides, dials and
// pipes. The bytes travel on a second connection to the runner's socket,
// upgraded from HTTP to a yamux session (EgressUpgrade), so bulk downloads
// never queue behind or ahead of the call frames of the websocket, and
// yamux's per-stream windows keep one connection from starving another.
//
// The runner opens one yamux stream per proxied connection and writes an
// EgressOpen; the gateway answers with an EgressVerdict; when the verdict
// allows, the stream then carries the connection's bytes both ways.
const (
	// EgressPath is the HTTP path of the egress upgrade.
	EgressPath = "/v1/egress"
	// EgressUpgrade is the Upgrade token of the egress connection.
	EgressUpgrade = "sandgate-egress"
	// MaxEgressFrame bounds one EgressOpen or EgressVerdict.
	MaxEgressFrame = 4096
)

// EgressOpen is what a sandbox program asked to reach, as the runner's
// proxy parsed it. Nothing in it is trusted: the gateway normalises and
// checks every field.
type EgressOpen struct {
	Kind string `json:"kind"` // "connect", "http" or "socks5"
	Host string `json:"host"`
	Port uint16 `json:"port"`
}

// EgressVerdict is the gateway's answer to an EgressOpen. Status is an
// HTTP status (200 when allowed); Reason is one line for the person or
// agent reading the refusal.
type EgressVerdict struct {
	Status int    `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Allowed reports whether the verdict lets the connection through.
func (v EgressVerdict) Allowed() bool { return v.Status == http.StatusOK }

// WriteEgressFrame writes v as one length-prefixed JSON frame.
func WriteEgressFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > MaxEgressFrame {
		return fmt.Errorf("egress frame of %d bytes exceeds %d", len(body), MaxEgressFrame)
	}
	buf := make([]byte, 2, 2+len(body))
	binary.BigEndian.PutUint16(buf, uint16(len(body)))
	_, err = w.Write(append(buf, body...))
	return err
}

// ReadEgressFrame reads one frame written by WriteEgressFrame into v.
func ReadEgressFrame(r io.Reader, v any) error {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > MaxEgressFrame {
		return fmt.Errorf("egress frame of %d bytes exceeds %d", size, MaxEgressFrame)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// YamuxConfig returns the session settings both ends use. Whoever is on
// the other end may be hostile (the runner shares its uid with sandbox
// code), so the backlog is short, writes time out and nothing is logged
// per frame.
func YamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.AcceptBacklog = 64
	c.EnableKeepAlive = true
	c.KeepAliveInterval = PingInterval
	c.ConnectionWriteTimeout = 10 * time.Second
	c.StreamOpenTimeout = 10 * time.Second
	c.StreamCloseTimeout = time.Minute
	// Room for about 4 ms of a 256 MB/s stream: enough window that one
	// connection can fill the pipe, small enough that 64 of them stay
	// within 64 MiB per sandbox.
	c.MaxStreamWindowSize = 1 << 20
	c.LogOutput = io.Discard
	return c
}

// DialEgress opens the egress connection to a runner and returns the
// gateway's end of its yamux session; the runner opens the streams, the
// gateway accepts them.
func DialEgress(ctx context.Context, dial DialFunc) (*yamux.Session, error) {
	hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	conn, err := dial(hctx)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "connect to runner for egress: " + err.Error()}
	}
	upgraded, err := upgradeConn(hctx, conn, EgressPath, EgressUpgrade, "")
	if err != nil {
		conn.Close()
		return nil, err
	}
	sess, err := yamux.Client(upgraded, YamuxConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("start egress session: %w", err)
	}
	return sess, nil
}

// readAheadConn is a connection whose first bytes were already read from
// it, into ahead.
type readAheadConn struct {
	net.Conn
	ahead []byte
}

// CloseWrite half-closes the connection where the one underneath can.
func (c *readAheadConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

func (c *readAheadConn) Read(p []byte) (int, error) {
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
