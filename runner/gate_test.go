package runner

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

func unixGate(t *testing.T, fallback time.Duration) (*Gate, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.sock")
	g, err := NewGate(func() (net.Listener, error) { return net.Listen("unix", path) }, fallback)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, path
}

// accepted dials path and returns both ends.
func accepted(t *testing.T, g *Gate, path string) (client, server net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := g.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// closedByPeer reports whether c reads EOF (or an error) within a while.
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err != nil
}

// TestGateSuspend: a suspension closes the listener and every connection
// but the one kept; Accept waits across it and serves again after
// Reopen; a second Suspend or Reopen changes nothing.
func TestGateSuspend(t *testing.T) {
	g, path := unixGate(t, time.Hour)
	c1, _ := accepted(t, g, path)
	c2, keep := accepted(t, g, path)

	g.Suspend(keep)
	g.Suspend(keep)
	if !g.Suspended() {
		t.Fatal("not suspended")
	}
	if !closedByPeer(c1) {
		t.Error("a connection other than the kept one is still open")
	}
	if _, err := keep.Write([]byte("x")); err != nil {
		t.Errorf("the kept connection was closed: %v", err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c2.Read(make([]byte, 1)); n != 1 {
		t.Errorf("the kept connection does not carry data: %v", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Error("a suspended gate accepts connections")
	}

	got := make(chan net.Conn, 1)
	go func() {
		c, err := g.Accept()
		if err == nil {
			got <- c
		}
		close(got)
	}()
	if err := g.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	if err := g.Reopen(); err != nil {
		t.Errorf("Reopen of a listening gate: %v", err)
	}
	c3, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial after Reopen: %v", err)
	}
	defer c3.Close()
	if c, ok := <-got; !ok || c == nil {
		t.Fatal("Accept did not return the connection made after Reopen")
	}
}

// TestGateFallback: a gate nobody reopens binds again by itself.
func TestGateFallback(t *testing.T) {
	g, path := unixGate(t, 50*time.Millisecond)
	g.Suspend(nil)
	deadline := time.Now().Add(10 * time.Second)
	for g.Suspended() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the gate did not listen again after its fallback: %v", err)
	}
	c.Close()
}

// TestGateClose: Close ends a suspended gate's Accept.
func TestGateClose(t *testing.T) {
	g, _ := unixGate(t, time.Hour)
	g.Suspend(nil)
	done := make(chan error, 1)
	go func() { _, err := g.Accept(); done <- err }()
	g.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Accept after Close returned a connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}
