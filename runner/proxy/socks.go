package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928), CONNECT only, without authentication.
const (
	socksVersion   = 0x05
	socksNoAuth    = 0x00
	socksNoMethod  = 0xff
	socksConnect   = 0x01
	atypIPv4       = 0x01
	atypDomain     = 0x03
	atypIPv6       = 0x04
	repSucceeded   = 0x00
	repFailure     = 0x01
	repNotAllowed  = 0x02
	repHostUnreach = 0x04
	repTTLExpired  = 0x06
	repCmdUnsupp   = 0x07
	repAtypUnsupp  = 0x08
)

// serveSOCKS serves one SOCKS5 CONNECT. SOCKS carries no text: the
// refusal's reason goes to the runner's log, its kind to the reply code.
func (s *Server) serveSOCKS(ctx context.Context, conn net.Conn, br *bufio.Reader, log *slog.Logger) {
	if !socksGreeting(conn, br) {
		return
	}
	dest, rep := socksRequest(br)
	if rep != repSucceeded {
		socksReply(conn, rep)
		return
	}
	tunnel, err := s.Open.Open(ctx, dest)
	if err != nil {
		r := asRefusal(err)
		log.Info("egress refused", "host", dest.Host, "port", dest.Port, "error", r.Reason)
		socksReply(conn, socksCode(r.Status))
		return
	}
	defer tunnel.Close()
	if !socksReply(conn, repSucceeded) {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	Relay(conn, br, tunnel)
}

// socksGreeting reads the method list and picks "no authentication".
func socksGreeting(conn net.Conn, br *bufio.Reader) bool {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != socksVersion {
		return false
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return false
	}
	for _, m := range methods {
		if m == socksNoAuth {
			_, err := conn.Write([]byte{socksVersion, socksNoAuth})
			return err == nil
		}
	}
	_, _ = conn.Write([]byte{socksVersion, socksNoMethod})
	return false
}

// socksRequest reads a request; a reply code other than success says
// why it cannot be served.
func socksRequest(br *bufio.Reader) (Dest, byte) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != socksVersion {
		return Dest{}, repFailure
	}
	if hdr[1] != socksConnect {
		return Dest{}, repCmdUnsupp
	}
	var host string
	switch hdr[3] {
	case atypIPv4, atypIPv6:
		n := 4
		if hdr[3] == atypIPv6 {
			n = 16
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return Dest{}, repFailure
		}
		ip, _ := netip.AddrFromSlice(b)
		host = ip.String()
	case atypDomain:
		n, err := br.ReadByte()
		if err != nil || n == 0 {
			return Dest{}, repFailure
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return Dest{}, repFailure
		}
		host = string(b)
	default:
		return Dest{}, repAtypUnsupp
	}
	var port [2]byte
	if _, err := io.ReadFull(br, port[:]); err != nil {
		return Dest{}, repFailure
	}
	p := binary.BigEndian.Uint16(port[:])
	if p == 0 {
		return Dest{}, repFailure
	}
	return Dest{Kind: KindSOCKS, Host: host, Port: p}, repSucceeded
}

// socksReply writes a reply with an unspecified bound address.
func socksReply(conn net.Conn, rep byte) bool {
	_, err := conn.Write([]byte{socksVersion, rep, 0x00, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err == nil
}

// socksCode maps a refusal's HTTP status to a SOCKS5 reply code.
func socksCode(status int) byte {
	switch status {
	case http.StatusForbidden:
		return repNotAllowed
	case http.StatusBadGateway:
		return repHostUnreach
	case http.StatusGatewayTimeout:
		return repTTLExpired
	}
	return repFailure
}
