package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/proxy"
)

// TestOpenWaitsForTheGateway: a connection made before the gateway has
// attached its egress session waits for it and gets the gateway's
// verdict, not a refusal; with no gateway at all it is refused once
// sessionWait has passed.
func TestOpenWaitsForTheGateway(t *testing.T) {
	dest := proxy.Dest{Kind: proxy.KindConnect, Host: "example.test", Port: 443}
	var l Link
	type opened struct {
		conn net.Conn
		err  error
	}
	done := make(chan opened, 1)
	go func() {
		conn, err := l.Open(t.Context(), dest)
		done <- opened{conn, err}
	}()

	// The gateway's side attaches once Open is waiting, and refuses the
	// destination with its own words.
	for deadline := time.Now().Add(10 * time.Second); ; {
		l.mu.Lock()
		waiting := l.up != nil
		l.mu.Unlock()
		if waiting {
			break
		}
		select {
		case got := <-done:
			t.Fatalf("Open did not wait for the gateway: %v, %v", got.conn, got.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Open is not waiting for a session")
		}
		time.Sleep(time.Millisecond)
	}
	runnerEnd, gatewayEnd := net.Pipe()
	go l.Serve(runnerEnd)
	gw, err := yamux.Client(gatewayEnd, protocol.YamuxConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	stream, err := gw.AcceptStream()
	if err != nil {
		t.Fatal(err)
	}
	var req protocol.EgressOpen
	if err := protocol.ReadEgressFrame(stream, &req); err != nil || req.Host != "example.test" || req.Port != 443 {
		t.Fatalf("the gateway got %+v, %v", req, err)
	}
	if err := protocol.WriteEgressFrame(stream, protocol.EgressVerdict{Status: http.StatusForbidden, Reason: "not in the allowlist"}); err != nil {
		t.Fatal(err)
	}
	got := <-done
	var refusal *proxy.Refusal
	if !errors.As(got.err, &refusal) || refusal.Status != http.StatusForbidden || refusal.Reason != "not in the allowlist" {
		t.Fatalf("Open before the gateway attached: %v, %v; want the gateway's 403", got.conn, got.err)
	}

	// No gateway: refused after the wait (shortened here), or as soon as
	// the caller gives up.
	saved := sessionWait
	sessionWait = 50 * time.Millisecond
	defer func() { sessionWait = saved }()
	var alone Link
	if _, err := alone.Open(t.Context(), dest); !errors.As(err, &refusal) || refusal.Status != http.StatusServiceUnavailable {
		t.Errorf("Open with no gateway: %v; want a 503", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	sessionWait = time.Hour
	if _, err := alone.Open(ctx, dest); !errors.As(err, &refusal) || refusal.Status != http.StatusServiceUnavailable {
		t.Errorf("Open with no gateway and a cancelled caller: %v; want a 503 at once", err)
	}
}
