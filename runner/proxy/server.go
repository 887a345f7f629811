package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Kind says how the client asked for the destination.
type Kind string

// Kinds of request.
const (
	KindConnect Kind = "connect" // HTTP CONNECT host:port
	KindHTTP    Kind = "http"    // absolute-URI HTTP request (GET http://host/...)
	KindSOCKS   Kind = "socks5"  // SOCKS5 CONNECT
)

// Dest is what a client asked to reach, as it sent it: a name or an
// address literal (IPv6 without brackets); nothing is interpreted.
type Dest struct {
	Kind Kind
	Host string
	Port uint16
}

// Opener opens a tunnel to dest. Closing the returned conn ends it; a
// CloseWrite method, when the conn has one, half-closes it.
type Opener interface {
	Open(ctx context.Context, dest Dest) (net.Conn, error)
}

// Refusal is an Opener error to show the client as a refusal. Status is
// an HTTP status (403 refused by policy, 429 too many connections, 502
// unreachable, 503 egress unavailable, 504 timed out); Reason is one line
// for the person or agent reading it.
type Refusal struct {
	Status int
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// Server accepts client connections and serves each.
type Server struct {
	Open Opener
	Log  *slog.Logger
	// HandshakeTimeout bounds reading what a client asks for (default 30 s).
	HandshakeTimeout time.Duration
	// MaxConns bounds concurrent client connections (default 256); more
	// are answered at once with 503 (SOCKS: general failure).
	MaxConns int
}

const (
	defaultHandshakeTimeout = 30 * time.Second
	defaultMaxConns         = 256
)

// Serve accepts on ln until ln is closed or ctx ends, serving each
// connection in its own goroutine. Ending ctx also closes the live ones.
// It returns nil after ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	max := s.MaxConns
	if max <= 0 {
		max = defaultMaxConns
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, max)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept proxy connection: %w", err)
		}
		select {
		case slots <- struct{}{}:
		default:
			go s.busy(conn)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.serveConn(ctx, conn, log)
		}()
	}
}

// busy answers a connection over MaxConns without reading much of it.
func (s *Server) busy(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	var first [1]byte
	if _, err := conn.Read(first[:]); err != nil {
		return
	}
	if first[0] == socksVersion {
		_, _ = conn.Write([]byte{socksVersion, 0xff}) // no acceptable method: the client stops
		return
	}
	writeRefusal(conn, &Refusal{Status: http.StatusServiceUnavailable, Reason: "sandgate egress: the sandbox's proxy has too many open connections; close some and retry"})
}

// serveConn tells the protocol by the first byte and serves it.
func (s *Server) serveConn(ctx context.Context, conn net.Conn, log *slog.Logger) {
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	timeout := s.HandshakeTimeout
	if timeout <= 0 {
		timeout = defaultHandshakeTimeout
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	br := bufio.NewReaderSize(conn, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	switch {
	case first[0] == socksVersion:
		s.serveSOCKS(ctx, conn, br, log)
	case first[0] >= 'A' && first[0] <= 'Z':
		s.serveHTTP(ctx, conn, br, log)
	case first[0] == 0x16:
		log.Info("egress proxy: a client spoke TLS to the proxy; its proxy URL must be http://127.0.0.1:3128, not https://")
	}
}
