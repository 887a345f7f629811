package mcpedge

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A running call's progress and log notifications are written by the
// edge straight into the call's own POST response, by the goroutine that
// runs the call, not queued for mcp-go. mcp-go (v1.2.1) queues a legacy
// session's notifications on one channel for all of the session's
// requests (server/streamable_http.go: handlePost reuses the registered
// session, line 686, and each request's forwarder takes from
// session.notificationChannel, line 819), and a forwarder that takes one
// after its own request's response was written drops it (lines 826-834).
// handlePost returns without waiting for its forwarder to stop (lines
// 971-974; it waits only with an event store, lines 928-930), so the forwarder of a call that
// has just been answered can still take, and drop, the first
// notifications of the session's next call; waiting for the queue to
// empty cannot tell that from delivery. Written here, every notification
// is on the wire before the call returns, and so before its result.

// notifyWriteTimeout ends a call's stream whose client stopped reading:
// a notification that cannot go out in this long breaks the connection
// rather than hold the call up.
const notifyWriteTimeout = 30 * time.Second

// responseStream is one POST's response writer, which mcp-go and the
// request's running call (notifier) both write to: each write, and the
// start of the response, under one lock. mcp-go sets its headers on a
// map of its own (Header), copied to the response when mcp-go starts it,
// because its notification forwarder may set them while the call opens
// the stream.
type responseStream struct {
	http.ResponseWriter // the bindingWriter, whose state the lock guards too
	header              http.Header

	mu      sync.Mutex
	started bool // the status is written
	sse     bool // ... and the response is an SSE stream
	ended   bool // the call returned, or the request did: no more events
	broken  bool // an event could not be written
}

func newResponseStream(w http.ResponseWriter) *responseStream {
	return &responseStream{ResponseWriter: w, header: w.Header().Clone()}
}

type streamKey struct{}

func withResponseStream(ctx context.Context, s *responseStream) context.Context {
	return context.WithValue(ctx, streamKey{}, s)
}

func (s *responseStream) Header() http.Header { return s.header }

func (s *responseStream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(code) // once a call opened the stream, mcp-go's is redundant
}

func (s *responseStream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(http.StatusOK)
	return s.ResponseWriter.Write(b)
}

func (s *responseStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *responseStream) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// start starts the response with mcp-go's headers, unless it is started.
// The caller holds mu.
func (s *responseStream) start(code int) {
	if s.started {
		return
	}
	s.started = true
	s.copyHeader()
	s.sse = code == http.StatusOK && strings.HasPrefix(s.ResponseWriter.Header().Get("Content-Type"), "text/event-stream")
	s.ResponseWriter.WriteHeader(code)
}

// copyHeader puts mcp-go's headers on the response. The caller holds mu.
func (s *responseStream) copyHeader() {
	h := s.ResponseWriter.Header()
	for k, v := range s.header {
		h[k] = v
	}
}

// end stops the events: the call returned, so its result may be written.
func (s *responseStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
}

// close ends the request: nothing is written after it. mcp-go's headers
// go out even when it wrote nothing.
func (s *responseStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if !s.started {
		s.copyHeader()
	}
}

// event writes n as one SSE event, first opening the stream as mcp-go
// does (same headers) when nothing was written yet. It reports whether n
// was written.
func (s *responseStream) event(n mcp.JSONRPCNotification) bool {
	data, err := json.Marshal(n)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.broken {
		return false
	}
	if !s.started {
		// Set here on the response's own map, never mcp-go's (see
		// responseStream); mcp-go's later, identical ones are dropped.
		h := s.ResponseWriter.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		s.started, s.sse = true, true
		s.ResponseWriter.WriteHeader(http.StatusOK)
	}
	if !s.sse {
		return false
	}
	rc := http.NewResponseController(s.ResponseWriter)
	_ = rc.SetWriteDeadline(time.Now().Add(notifyWriteTimeout))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	// One Write per event, as mcp-go writes them (bulktext.go).
	if _, err := s.ResponseWriter.Write([]byte("event: message\ndata: " + string(data) + "\n\n")); err != nil {
		s.broken = true
		return false
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

// notifier sends one tool call's notifications to its client, written
// into the call's response (see above): progress when the client sent a
// progressToken, log messages when the log level the client chose admits
// info. It implements mcpapi.Notifier.
type notifier struct {
	ctx     context.Context
	out     *responseStream
	session server.ClientSession
	token   mcp.ProgressToken // nil: the client wants no progress
	// last is the progress last sent; Finish sends one more.
	last int
	// sent counts the notifications written; Finish sends none when
	// none was.
	sent int
}

// newNotifier returns the notifier of the call ctx belongs to, or nil
// when its response cannot carry notifications: the request did not
// come through the edge's middleware, or it has no session (mcp-go
// gives every request one, its own for a 2026-07-28 request).
func newNotifier(ctx context.Context, token mcp.ProgressToken) *notifier {
	out, _ := ctx.Value(streamKey{}).(*responseStream)
	session := server.ClientSessionFromContext(ctx)
	if out == nil || session == nil {
		return nil
	}
	return &notifier{ctx: ctx, out: out, session: session, token: token}
}

func (n *notifier) Progress(progress, total int, message string) {
	if n.token == nil {
		return
	}
	n.last = progress
	params := map[string]any{"progressToken": n.token, "progress": progress, "message": message}
	if total > 0 {
		params["total"] = total
	}
	n.send("notifications/progress", params)
}

func (n *notifier) Log(logger, text string) {
	if n.logs() {
		n.send("notifications/message", map[string]any{"level": mcp.LoggingLevelInfo, "logger": logger, "data": text})
	}
}

// logs reports whether the client takes log messages at level info, as
// mcp-go decides it (MCPServer.SendLogMessageToClient): from 2026-07-28,
// by the level the request declares, none if it declares none; before,
// by the session's level (logging/setLevel).
func (n *notifier) logs() bool {
	if info := server.RequestProtocolInfoFromContext(n.ctx); info != nil && info.Modern {
		return info.LogLevel != "" && mcp.LoggingLevelInfo.ShouldSendTo(info.LogLevel)
	}
	s, ok := n.session.(server.SessionWithLogging)
	return ok && mcp.LoggingLevelInfo.ShouldSendTo(s.GetLogLevel())
}

// send writes one notification into the call's response. mcp-go must
// then write the result as an SSE event too, which it does for a session
// marked as having been sent a notification (as its own sending marks
// it).
func (n *notifier) send(method string, params map[string]any) {
	if !n.session.Initialized() {
		return
	}
	if s, ok := n.session.(server.SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification()
	}
	nt := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
	if n.out.event(nt) {
		n.sent++
	}
}

// Finish sends the call's completion, as its last notification: progress
// equal to total, with the status line, or a "sandgate" log record.
// Every notification is written by the time Progress or Log returns, so
// the result, which mcp-go writes once the call returns, follows them.
func (n *notifier) Finish(status string) {
	if n.sent == 0 {
		return
	}
	if n.token != nil {
		done := n.last + 1 // the end is the last step
		n.Progress(done, done, status)
	} else {
		n.Log("sandgate", status)
	}
}
