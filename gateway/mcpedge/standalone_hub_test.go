package mcpedge

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// hubRecorder is a listenHub whose fallback (mcp-go's queue) records.
type hubRecorder struct {
	*listenHub
	mu   sync.Mutex
	back []string // "session method uri" sent to the fallback
}

func newHubRecorder() *hubRecorder {
	r := &hubRecorder{}
	r.listenHub = newListenHub(func(s string, n mcp.JSONRPCNotification) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.back = append(r.back, fmt.Sprint(s, " ", n.Method, " ", n.Params.AdditionalFields["uri"]))
	})
	return r
}

func updated(uri string) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: mcp.MethodNotificationResourceUpdated, Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}}}
}

// listChangedEvent is a tools/list_changed as mcp-go writes it on a POST.
const listChangedEvent = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"

// TestListenHub walks the hub's books through the cases that decide where
// a notification goes: stream, mcp-go's queue, or nowhere (a duplicate).
func TestListenHub(t *testing.T) {
	t.Run("no stream falls back", func(t *testing.T) {
		h := newHubRecorder()
		if h.publish("s", updated("a")) {
			t.Fatal("publish without a stream reported a stream")
		}
	})
	t.Run("pending survives replacement", func(t *testing.T) {
		h := newHubRecorder()
		_, gen1, _ := h.open("s")
		h.publish("s", updated("a"))
		_, gen2, _ := h.open("s")
		if notes, stop := h.take("s", gen1); notes != nil || !isClosed(stop) {
			t.Fatalf("replaced stream took %v, stop closed %t", notes, isClosed(stop))
		}
		h.release("s", gen1, nil)
		if notes, _ := h.take("s", gen2); len(notes) != 1 {
			t.Fatalf("replacing stream got %d notes, want 1", len(notes))
		}
	})
	t.Run("late release of a replaced stream", func(t *testing.T) {
		h := newHubRecorder()
		_, gen1, _ := h.open("s")
		_, gen2, _ := h.open("s")
		h.release("s", gen2, nil)
		_, gen3, _ := h.open("s")
		h.release("s", gen1, nil) // the first GET ends only now
		if !h.publish("s", updated("a")) {
			t.Fatal("the first stream's late end closed the third")
		}
		if notes, _ := h.take("s", gen3); len(notes) != 1 {
			t.Fatalf("third stream got %d notes, want 1", len(notes))
		}
	})
	t.Run("release gives unwritten back to the queue", func(t *testing.T) {
		h := newHubRecorder()
		_, gen, _ := h.open("s")
		h.publish("s", updated("a"))
		h.publish("s", updated("b"))
		notes, _ := h.take("s", gen)
		h.publish("s", updated("c"))
		h.release("s", gen, notes[1:])
		if fmt.Sprint(h.back) != "[s notifications/resources/updated b s notifications/resources/updated c]" {
			t.Fatalf("fallback got %v", h.back)
		}
	})
	t.Run("same notice waits once", func(t *testing.T) {
		h := newHubRecorder()
		_, gen, _ := h.open("s")
		h.publish("s", updated("a"))
		h.publish("s", updated("a"))
		h.publish("s", updated("b"))
		if notes, _ := h.take("s", gen); len(notes) != 2 {
			t.Fatalf("%d notes waiting, want 2 (a once, b)", len(notes))
		}
	})
	t.Run("full buffer drops the oldest", func(t *testing.T) {
		h := newHubRecorder()
		st, gen, _ := h.open("s")
		for i := range standaloneBuffer + 3 {
			h.publish("s", updated(fmt.Sprint(i)))
		}
		notes, _ := h.take("s", gen)
		if len(notes) != standaloneBuffer || notes[0].n.Params.AdditionalFields["uri"] != "3" || st.dropped != 3 {
			t.Fatalf("%d notes from %v, %d dropped", len(notes), notes[0].n.Params.AdditionalFields["uri"], st.dropped)
		}
	})
	t.Run("broadcast copy is swallowed once", func(t *testing.T) {
		h := newHubRecorder()
		_, gen, _ := h.open("s")
		sessions := h.expectBroadcast()
		h.deliverBroadcast(sessions, mcp.JSONRPCNotification{Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged}})
		if notes, _ := h.take("s", gen); len(notes) != 1 {
			t.Fatalf("%d notes on the stream, want the broadcast", len(notes))
		}
		if h.swallow("other", []byte(listChangedEvent)) {
			t.Error("swallowed another session's copy")
		}
		if !h.swallow("s", []byte(listChangedEvent)) {
			t.Error("did not swallow the copy mcp-go queued")
		}
		if h.swallow("s", []byte(listChangedEvent)) {
			t.Error("swallowed a second copy")
		}
	})
	t.Run("stream gone before delivery leaves the copy", func(t *testing.T) {
		h := newHubRecorder()
		_, gen, _ := h.open("s")
		sessions := h.expectBroadcast()
		h.release("s", gen, nil)
		h.deliverBroadcast(sessions, mcp.JSONRPCNotification{Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged}})
		if h.swallow("s", []byte(listChangedEvent)) || len(h.back) != 0 {
			t.Errorf("copy swallowed, or sent again (%v): the queued one must go through", h.back)
		}
	})
	t.Run("copy already swallowed is sent again", func(t *testing.T) {
		h := newHubRecorder()
		_, gen, _ := h.open("s")
		sessions := h.expectBroadcast()
		h.swallow("s", []byte(listChangedEvent)) // a response left it out
		h.release("s", gen, nil)
		h.deliverBroadcast(sessions, mcp.JSONRPCNotification{Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged}})
		if len(h.back) != 1 {
			t.Errorf("fallback got %v, want the list_changed once", h.back)
		}
	})
	t.Run("closed hub refuses streams", func(t *testing.T) {
		h := newHubRecorder()
		_, gen, _ := h.open("s")
		h.close()
		if _, stop := h.take("s", gen); !isClosed(stop) {
			t.Error("open stream not stopped by close")
		}
		if _, _, ok := h.open("t"); ok {
			t.Error("closed hub opened a stream")
		}
	})
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestIsBroadcastEvent: only a whole tools/list_changed notification
// event counts, never a request or response that names the method.
func TestIsBroadcastEvent(t *testing.T) {
	for _, tc := range []struct {
		name, b string
		want    bool
	}{
		{"notification", listChangedEvent, true},
		{"response naming it", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"m\":\"notifications/tools/list_changed\"}}\n\n", false},
		{"request with an id", "event: message\ndata: {\"method\":\"notifications/tools/list_changed\",\"id\":7}\n\n", false},
		{"two events", listChangedEvent + listChangedEvent, false},
		{"bare JSON", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}", false},
		{"another method", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isBroadcastEvent([]byte(tc.b)); got != tc.want {
				t.Errorf("isBroadcastEvent(%q) = %t", tc.b, got)
			}
		})
	}
}

// FuzzIsBroadcastEvent: any bytes a response writes are classified
// without panicking, and only SSE events can count.
func FuzzIsBroadcastEvent(f *testing.F) {
	f.Add([]byte(listChangedEvent))
	f.Add([]byte("event: message\ndata: {\"method\":\"notifications/tools/list_changed\",\"id\":7}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if isBroadcastEvent(b) && !bytes.HasPrefix(b, []byte("event: message\ndata: ")) {
			t.Fatalf("%q classified as tools/list_changed", b)
		}
	})
}
