package mcpedge

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
)

// redelivery makes sure that a legacy session without a standalone
// stream hears of a tools/list_changed broadcast. mcp-go queues the
// broadcast for every session, and such a session gets it with its next
// POST response. But mcp-go (v1.2.1, server/streamable_http.go,
// handlePost) forwards a request's notifications from a goroutine that
// takes one off the session's queue and only then locks the response;
// when the request ends in that window, the notification it holds is
// dropped. For a call's own notifications the tools' notifier prevents
// that (notify.go); a broadcast can arrive during any request, a ping
// included, and its loss left the client with a stale tool list for
// good.
//
// So each broadcast stays owed to such a session until the edge sees it
// written on one of the session's POST responses. When a POST ends with
// it owed, the session's queue empty and no other POST of the session in
// flight, no forwarder can still hold a copy to write: it was dropped,
// and the edge queues it again. Never more than one copy is out, so the
// client is told once.
type redelivery struct {
	mu sync.Mutex
	// owed holds the sessions a broadcast is owed to. armed is false
	// until mcp-go has queued it: before that an empty queue proves
	// nothing.
	owed     map[string]bool // session → armed
	inflight map[string]int  // POSTs of the session being served
	sessions map[string]server.ClientSession
	// owing is len(owed), read without the lock on every response write.
	owing       atomic.Int64
	requeue     func(session string)
	redelivered prometheus.Counter
}

func newRedelivery(requeue func(session string)) *redelivery {
	return &redelivery{owed: map[string]bool{}, inflight: map[string]int{}, sessions: map[string]server.ClientSession{},
		requeue: requeue, redelivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandgate_list_changed_redelivered_total",
			Help: "tools/list_changed notifications queued again for a legacy session after mcp-go dropped its copy at the end of a request."})}
}

// register and unregister follow mcp-go's sessions, whose queues end
// reads.
func (r *redelivery) register(s server.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[s.SessionID()] = s
}

func (r *redelivery) unregister(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sessions, session)
	delete(r.inflight, session)
	if _, ok := r.owed[session]; ok {
		delete(r.owed, session)
		r.owing.Add(-1)
	}
}

// expect marks a broadcast owed to every session but those with a
// stream (which carries it instead); arm follows once mcp-go queued it.
func (r *redelivery) expect(streams []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.sessions {
		if _, ok := r.owed[s]; ok || slices.Contains(streams, s) {
			continue // a copy already owed says the same
		}
		r.owed[s] = false
		r.owing.Add(1)
	}
}

func (r *redelivery) arm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.owed {
		r.owed[s] = true
	}
}

// begin and end bracket each POST of a legacy session.
func (r *redelivery) begin(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight[session]++
}

func (r *redelivery) end(session string) {
	r.mu.Lock()
	if r.inflight[session]--; r.inflight[session] <= 0 {
		delete(r.inflight, session)
	}
	cs := r.sessions[session]
	lost := r.owed[session] && r.inflight[session] == 0 && cs != nil && len(cs.NotificationChannel()) == 0
	r.mu.Unlock()
	if lost {
		r.redelivered.Inc()
		r.requeue(session)
	}
}

// written settles the session's debt when b, one write of its POST
// response, is the broadcast.
func (r *redelivery) written(session string, b []byte) {
	if r.owing.Load() == 0 || !isBroadcastEvent(b) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.owed[session]; ok {
		delete(r.owed, session)
		r.owing.Add(-1)
	}
}

// listChanged is the broadcast.
var listChanged = mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
	Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged}}
