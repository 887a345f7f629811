package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/proxy"
)

// FuzzHandshake feeds arbitrary client bytes to one proxy connection:
// the proxy never panics, always finishes within its handshake timeout,
// and answers briefly before any tunnel opens.
func FuzzHandshake(f *testing.F) {
	for _, s := range []string{
		"CONNECT a.example:443 HTTP/1.1\r\n\r\n", "GET http://a.example/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x01a\x00\x50", "\x05\x02\x00\x02\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x16", "\x16\x03\x01", "GET / HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, allow bool) {
		o := &opener{refuse: &proxy.Refusal{Status: http.StatusForbidden, Reason: "no"}}
		if allow {
			o = &opener{forward: func(far net.Conn) { far.Close() }}
		}
		ln := newPipeListener()
		s := &proxy.Server{Open: o, HandshakeTimeout: 100 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, ln) }()
		client := ln.dial()
		go func() { client.Write(in) }()
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		out, err := io.ReadAll(io.LimitReader(client, 1<<20))
		client.Close()
		cancel()
		<-done
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the proxy neither answered nor closed within 10 s for %q", in)
		}
		if len(out) > 4096 {
			t.Fatalf("the proxy wrote %d bytes before any tunnel", len(out))
		}
	})
}

// pipeListener hands out net.Pipe ends, so a fuzz run needs no sockets.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, 1), closed: make(chan struct{})}
}

func (l *pipeListener) dial() net.Conn {
	a, b := net.Pipe()
	l.conns <- b
	return a
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
