package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"

	"github.com/sandgate/sandgate/gateway/egress/guard"
)

// helloTimeout bounds waiting for a client's TLS ClientHello.
const helloTimeout = 15 * time.Second

// maxHelloBytes bounds what is read while looking for the ClientHello;
// real ones are a few hundred bytes to a few KiB (post-quantum key
// shares included).
const maxHelloBytes = 64 << 10

var errHelloSeen = errors.New("client hello read")

// readSNI reads the TLS ClientHello the client sends first and returns
// the server name in it ("" when it names none) and every byte read, to
// be passed on to the destination unchanged.
func readSNI(conn net.Conn) (sni string, read []byte, err error) {
	var buf bytes.Buffer
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	defer conn.SetReadDeadline(time.Time{})
	rec := &recordingConn{r: io.TeeReader(io.LimitReader(conn, maxHelloBytes), &buf)}
	seen := false
	// crypto/tls parses the hello; the callback stops the handshake the
	// moment it has, before anything is written back.
	srv := tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni, seen = h.ServerName, true
		return nil, errHelloSeen
	}})
	err = srv.Handshake()
	if !seen {
		if err == nil {
			err = errors.New("no TLS ClientHello")
		}
		return "", buf.Bytes(), err
	}
	return sni, buf.Bytes(), nil
}

// sniMatches reports whether the ClientHello's server name is the host
// the connection was allowed for. A client connecting to an address
// literal sends no name, or that address.
func sniMatches(sni string, host guard.Host) bool {
	if sni == "" {
		return host.IP.IsValid()
	}
	h, err := guard.Normalize(sni)
	return err == nil && h.Name == host.Name
}

// tlsAccessDenied is a fatal TLS alert, access_denied: the one answer a
// client mid-handshake can show its user.
var tlsAccessDenied = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31}

// recordingConn feeds crypto/tls the client's bytes and swallows what it
// would write (it writes nothing before the callback stops it).
type recordingConn struct {
	net.Conn
	r io.Reader
}

func (c *recordingConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *recordingConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *recordingConn) Close() error                     { return nil }
func (c *recordingConn) SetDeadline(time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordingConn) LocalAddr() net.Addr              { return nil }
func (c *recordingConn) RemoteAddr() net.Addr             { return nil }
