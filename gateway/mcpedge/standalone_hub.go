package mcpedge

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// standaloneBuffer bounds the notifications waiting for one session's GET
// stream. Past it the oldest is dropped (and counted): they are change
// notices, and a later one says at least as much as an earlier one.
const standaloneBuffer = 256

// listenHub holds the standalone GET streams of legacy sessions and the
// notifications waiting for them. Only notifications that belong to no
// request come here (resources/updated, resources/list_changed,
// tools/list_changed); a call's progress and log notifications never do,
// they stay in mcp-go's queue, which only the session's POST responses
// read, so they reach the client on the call's own stream, before its
// result.
//
// A session has at most one stream: a second GET replaces the first (see
// open). A notification for a session without a stream goes to mcp-go's
// queue instead and comes with the session's next response, as it did
// before GET was served.
type listenHub struct {
	mu sync.Mutex
	by map[string]*sessionStream // sessions with an open stream
	// owed counts, per session, the tools/list_changed copies mcp-go
	// queued (it queues every broadcast for every session) that a stream
	// carries instead; the session's POST responses leave that many out
	// (see swallow), so the client is not told twice.
	owed map[string]int
	// owing is how many sessions owe anything, read without the lock by
	// swallow, which every write of every legacy response passes.
	owing    atomic.Int64
	closed   bool
	gens     uint64 // the last stream generation given out, unique per hub
	dropped  prometheus.Counter
	fallback func(session string, n mcp.JSONRPCNotification) // mcp-go's queue
}

// sessionStream is what one session's current GET stream is sent.
type sessionStream struct {
	gen     uint64        // the GET that owns it; a replacing GET takes a new one
	stop    chan struct{} // closed when that GET is replaced or the hub closes
	wake    chan struct{} // signalled when pending grows
	pending []standaloneNote
	dropped int // notifications this session lost to a full buffer
}

// standaloneNote is a notification waiting for a stream. queued means
// mcp-go holds a copy in the session's queue that the session owes.
type standaloneNote struct {
	n      mcp.JSONRPCNotification
	queued bool
}

func newListenHub(fallback func(string, mcp.JSONRPCNotification)) *listenHub {
	return &listenHub{by: map[string]*sessionStream{}, owed: map[string]int{}, fallback: fallback,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "sandgate_standalone_notifications_dropped_total",
			Help: "Notifications for a legacy session's GET stream dropped because the client read too slowly (the buffer keeps the newest)."})}
}

// open makes the calling GET the session's stream. A stream already open
// is replaced: the spec lets a server send each message on one stream
// only, and a client that lost its connection without the server seeing
// it must not be locked out until TCP notices. Notifications not yet
// written stay for the new stream. ok is false once the hub is closed.
func (h *listenHub) open(session string) (st *sessionStream, gen uint64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, 0, false
	}
	st = h.by[session]
	if st == nil {
		st = &sessionStream{wake: make(chan struct{}, 1)}
		h.by[session] = st
	} else {
		close(st.stop)
	}
	// Generations are unique across sessions' lifetimes, so a GET that
	// ends late never mistakes a later stream of the session for its own.
	h.gens++
	st.gen = h.gens
	st.stop = make(chan struct{})
	if len(st.pending) > 0 {
		st.signal()
	}
	return st, st.gen, true
}

// take returns what waits for the stream gen and forgets it, and the
// channel closed when gen is replaced.
func (h *listenHub) take(session string, gen uint64) ([]standaloneNote, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.by[session]
	if st == nil || st.gen != gen {
		return nil, closedChan
	}
	notes := st.pending
	st.pending = nil
	return notes, st.stop
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// release ends the stream gen, giving back notes it took but did not
// write. When gen is still the session's stream, everything waiting goes
// back to mcp-go's queue, for the session's next response.
// It returns how many notifications the session lost to a full buffer.
func (h *listenHub) release(session string, gen uint64, unwritten []standaloneNote) (dropped int) {
	h.mu.Lock()
	st := h.by[session]
	if st == nil || st.gen != gen {
		if st != nil {
			st.pending = append(unwritten, st.pending...)
			st.signal() // this stream may have taken the new one's wake-up
		}
		h.mu.Unlock()
		return 0
	}
	delete(h.by, session)
	var back []mcp.JSONRPCNotification
	for _, sn := range append(unwritten, st.pending...) {
		if n, ok := h.unowe(session, sn); ok {
			back = append(back, n)
		}
	}
	h.mu.Unlock()
	for _, n := range back {
		h.fallback(session, n)
	}
	return st.dropped
}

// publish hands n to the session's stream, and reports whether it had one.
func (h *listenHub) publish(session string, n mcp.JSONRPCNotification) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.by[session]
	if st == nil {
		return false
	}
	h.push(session, st, standaloneNote{n: n})
	return true
}

// push appends sn to st. A note the stream already waits to send is not
// added twice (queued ones excepted: each settles its own copy). When st
// is full the oldest note is dropped and counted. Callers hold h.mu.
func (h *listenHub) push(session string, st *sessionStream, sn standaloneNote) {
	if !sn.queued && slices.ContainsFunc(st.pending, sn.same) {
		return
	}
	if len(st.pending) >= standaloneBuffer {
		// A queued note's copy is still in mcp-go's queue, unless a
		// response left it out already: then it is lost like the others.
		_, _ = h.unowe(session, st.pending[0])
		st.pending = st.pending[1:]
		st.dropped++
		h.dropped.Inc()
	}
	st.pending = append(st.pending, sn)
	st.signal()
}

// same reports whether sn and o announce the same thing.
func (sn standaloneNote) same(o standaloneNote) bool {
	return !o.queued && sn.n.Method == o.n.Method && sn.n.Params.AdditionalFields["uri"] == o.n.Params.AdditionalFields["uri"]
}

// unowe settles a note that will not be written to a stream. A queued
// note's copy is still in mcp-go's queue unless a response already left
// it out: then the session is owed nothing, and the note must go back.
// ok reports whether it must. Callers hold h.mu.
func (h *listenHub) unowe(session string, sn standaloneNote) (mcp.JSONRPCNotification, bool) {
	if !sn.queued {
		return sn.n, true
	}
	if h.owed[session] > 0 {
		h.owe(session, -1)
		return sn.n, false
	}
	return sn.n, true
}

// owe changes what session owes by d. Callers hold h.mu.
func (h *listenHub) owe(session string, d int) {
	if h.owed[session] += d; h.owed[session] <= 0 {
		delete(h.owed, session)
	}
	h.owing.Store(int64(len(h.owed)))
}

// expectBroadcast is called before mcp-go broadcasts method to every
// session: each session with a stream will owe the copy mcp-go queues.
func (h *listenHub) expectBroadcast() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	sessions := make([]string, 0, len(h.by))
	for s := range h.by {
		h.owe(s, 1)
		sessions = append(sessions, s)
	}
	return sessions
}

// deliverBroadcast sends n, which mcp-go just queued for every session,
// to the streams of sessions (from expectBroadcast).
func (h *listenHub) deliverBroadcast(sessions []string, n mcp.JSONRPCNotification) {
	h.mu.Lock()
	var back []string
	for _, s := range sessions {
		sn := standaloneNote{n: n, queued: true}
		if st := h.by[s]; st != nil {
			h.push(s, st, sn)
		} else if _, ok := h.unowe(s, sn); ok {
			back = append(back, s)
		}
	}
	h.mu.Unlock()
	for _, s := range back {
		h.fallback(s, n)
	}
}

// swallow reports whether b, one SSE event mcp-go writes on a POST
// response of session, is a tools/list_changed copy the session owes,
// and if so settles the debt: the response leaves it out.
func (h *listenHub) swallow(session string, b []byte) bool {
	if h.owing.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owed[session] == 0 || !isBroadcastEvent(b) {
		return false
	}
	h.owe(session, -1)
	return true
}

// isBroadcastEvent reports whether b is exactly one SSE event carrying
// notifications/tools/list_changed, as mcp-go writes it.
func isBroadcastEvent(b []byte) bool {
	data, ok := bytes.CutPrefix(b, []byte("event: message\ndata: "))
	if !ok || !bytes.Contains(data, []byte(mcp.MethodNotificationToolsListChanged)) {
		return false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &msg) == nil && msg.ID == nil && msg.Method == mcp.MethodNotificationToolsListChanged
}

// missedBroadcast settles a copy mcp-go could not queue for session (its
// queue was full), which no response will carry.
func (h *listenHub) missedBroadcast(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owed[session] > 0 {
		h.owe(session, -1)
	}
}

// forget drops what the hub knows of an ended session.
func (h *listenHub) forget(session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.owed, session)
	h.owing.Store(int64(len(h.owed)))
}

// close ends every stream (gateway shutdown) and refuses new ones.
func (h *listenHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, st := range h.by {
		close(st.stop)
		st.stop = closedChan
	}
}

// signal wakes the stream's writer.
func (st *sessionStream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}
