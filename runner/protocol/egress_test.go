package protocol_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/runner/protocol"
)

// TestDialEgressKeepsBytesAfterTheUpgrade runs DialEgress against a
// runner that opens a stream and writes on it in the same packet as its
// 101 response, so that the gateway's read of the response takes the
// start of the yamux session too: those bytes must reach the session.
func TestDialEgressKeepsBytesAfterTheUpgrade(t *testing.T) {
	gatewayEnd, runnerEnd := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- eagerRunner(runnerEnd) }()
	sess, err := protocol.DialEgress(t.Context(), func(context.Context) (net.Conn, error) { return gatewayEnd, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	stream, err := sess.Accept()
	if err != nil {
		t.Fatalf("accept the runner's stream: %v", err)
	}
	got := make([]byte, len("hello"))
	if _, err := io.ReadFull(stream, got); err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v; want hello", got, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// eagerRunner answers an egress upgrade on conn and writes its response
// and the first frames of a yamux session (a new stream carrying "hello")
// in one write.
func eagerRunner(conn net.Conn) error {
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return err
	}
	req.Body.Close()
	var frames bytes.Buffer
	capture := &captureConn{Conn: conn, w: &frames}
	srv, err := yamux.Server(capture, protocol.YamuxConfig())
	if err != nil {
		return err
	}
	stream, err := srv.Open()
	if err != nil {
		return err
	}
	if _, err := stream.Write([]byte("hello")); err != nil {
		return err
	}
	response := "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + protocol.EgressUpgrade + "\r\n\r\n"
	capture.release(response)
	return nil
}

// captureConn holds what yamux writes until release, which sends it
// behind a prefix in a single write, and passes later writes through.
type captureConn struct {
	net.Conn
	mu       sync.Mutex // yamux writes from its own goroutine
	w        *bytes.Buffer
	released bool
}

func (c *captureConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.released {
		return c.w.Write(p)
	}
	return c.Conn.Write(p)
}

func (c *captureConn) release(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	_, _ = c.Conn.Write(append([]byte(prefix), c.w.Bytes()...))
}
