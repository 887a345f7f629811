package protocol_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runner/protocol"
)

// hostileRunner answers every request with an endless stream of stdout
// events, as a runner subverted by the code it runs could. (The honest
// runner is tested in package runner.)
func hostileRunner(t *testing.T) protocol.DialFunc {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		_, frame, err := conn.Read(r.Context())
		if err != nil {
			return
		}
		var req protocol.Request
		json.Unmarshal(frame, &req)
		chunk := make([]byte, 64<<10)
		ev, _ := json.Marshal(protocol.Event{ID: req.ID, Type: protocol.EventStdout, Data: chunk})
		for r.Context().Err() == nil {
			if conn.Write(r.Context(), websocket.MessageText, ev) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
}

func TestClientBoundsAFloodingRunner(t *testing.T) {
	t.Parallel()
	c, err := protocol.Dial(t.Context(), hostileRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The consumer never keeps up: it blocks on the first event. Without
	// the queue bound the gateway would buffer the flood without limit.
	block := make(chan struct{})
	defer close(block)
	first := true
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(t.Context(), protocol.OpExec, protocol.ExecRequest{Command: "yes"}, func(protocol.Event) {
			if first {
				first = false
				<-block
			}
		})
		done <- err
	}()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the client kept queueing a runner's flood")
	}
	if protocol.CodeOf(c.Err()) != protocol.CodeUnavailable {
		t.Fatalf("connection error: %v", c.Err())
	}
}
