package mcpedge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/sandgate/sandgate/auth/identity"
)

// Bounds of a standalone GET stream.
const (
	// standaloneKeepalive is how often an idle stream gets an SSE
	// comment, so proxies and load balancers do not cut it as idle.
	standaloneKeepalive = 25 * time.Second
	// standaloneWriteTimeout ends a stream whose client stopped reading:
	// a write that cannot go out in this long closes it.
	standaloneWriteTimeout = 30 * time.Second
)

// serveStandaloneStream serves GET /mcp, after authentication: a legacy
// session's standalone SSE stream, which carries only notifications that
// belong to no request (see listenHub). It is served here, not by mcp-go,
// because mcp-go (v1.2.1) feeds its GET stream from the same per-session
// queue as the POST responses, so a call's progress and log notifications
// could go to the GET stream, out of order or after the call's result.
// mcp-go never sees the GET, so its queue keeps only POST readers.
//
// The caller must own the session, as for POST (404 otherwise). The
// stream ends when the session ends (DELETE, idle TTL, lifetime), when
// the gateway shuts down, when another GET of the session replaces it,
// or when the client stops reading. An open stream does not keep a
// session from going idle: only requests do. Events carry no id, so
// there is nothing to resume: a GET with Last-Event-ID opens a fresh
// stream, and what was not yet written when a stream ended comes with
// the session's next response instead.
func (e *Edge) serveStandaloneStream(w http.ResponseWriter, r *http.Request) {
	p := e.principal(r.Context())
	id := r.Header.Get(sessionHeader)
	switch {
	case isModern(r, Message{}):
		w.Header().Set("Allow", "POST")
		http.Error(w, "GET is not part of protocol "+modernVersion+": open a subscriptions/listen request to receive notifications", http.StatusMethodNotAllowed)
		return
	case id == "":
		http.Error(w, "Mcp-Session-Id header is required: a standalone stream belongs to a session; send initialize first and pass the session id it returns", http.StatusBadRequest)
		return
	case !acceptsEventStream(r):
		http.Error(w, "Accept must list text/event-stream: GET /mcp opens an SSE stream", http.StatusNotAcceptable)
		return
	}
	ctx, ok := e.sessionStage(identity.With(r.Context(), p), w, r, p, Message{})
	if !ok {
		return
	}
	defer e.releaseSession(ctx)
	st, gen, ok := e.listeners.open(id)
	if !ok {
		http.Error(w, "the gateway is shutting down; reconnect to another replica or retry", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	unwritten, err := e.pumpStandalone(ctx, w, st, id, gen)
	if dropped := e.listeners.release(id, gen, unwritten); dropped > 0 || err != nil {
		e.log.Info("standalone stream ended", "session_id", id, "dropped", dropped, "error", err)
	}
}

// pumpStandalone writes what the hub has for the stream gen until the
// stream ends, and returns the notes it took but could not write.
func (e *Edge) pumpStandalone(ctx context.Context, w http.ResponseWriter, st *sessionStream, id string, gen uint64) ([]standaloneNote, error) {
	rc := http.NewResponseController(w)
	// The connection may serve further requests after this stream.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	write := func(s string) error {
		_ = rc.SetWriteDeadline(time.Now().Add(standaloneWriteTimeout))
		if _, err := w.Write([]byte(s)); err != nil {
			return err
		}
		return rc.Flush()
	}
	// A first comment gets the headers out, so the client sees the stream
	// open before there is anything to say.
	if err := write(": stream open\n\n"); err != nil {
		return nil, err
	}
	keepalive := time.NewTicker(standaloneKeepalive)
	defer keepalive.Stop()
	for {
		notes, stop := e.listeners.take(id, gen)
		for i, sn := range notes {
			b, err := json.Marshal(sn.n)
			if err == nil {
				err = write("event: message\ndata: " + string(b) + "\n\n")
			}
			if err != nil {
				return notes[i:], fmt.Errorf("write notification: %w", err)
			}
		}
		select {
		case <-st.wake:
		case <-keepalive.C:
			if err := write(": keepalive\n\n"); err != nil {
				return nil, fmt.Errorf("write keepalive: %w", err)
			}
		case <-stop:
			return nil, nil
		case <-ctx.Done():
			return nil, nil
		}
	}
}

// acceptsEventStream reports whether r's Accept header admits an SSE
// stream, as the spec requires a GET to say.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if mt == "text/event-stream" || mt == "text/*" || mt == "*/*" {
				return true
			}
		}
	}
	return false
}

// notifySession sends a notification that belongs to no request to a
// legacy session: on its standalone stream when it has one open, else
// into mcp-go's queue, whence it comes with the session's next response.
func (e *Edge) NotifySession(session, method string, params map[string]any) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
	if !e.listeners.publish(session, n) {
		e.queueNotification(session, n)
	}
}

// queueNotification puts n in the session's mcp-go queue. A full queue
// (a client that has not sent a request for a long while) loses it.
func (e *Edge) queueNotification(session string, n mcp.JSONRPCNotification) {
	err := e.mcp.SendNotificationToSpecificClient(session, n.Method, n.Params.AdditionalFields)
	if err != nil && !errors.Is(err, server.ErrSessionNotFound) {
		e.log.Debug("notification not queued", "session_id", session, "method", n.Method, "error", err)
	}
}

// AnnounceToolsChanged runs change, which makes mcp-go broadcast
// notifications/tools/list_changed by queueing it for every session, and
// sends it at once to the sessions with a standalone stream; their POST
// responses then leave mcp-go's copy out (see listenHub.swallow). The
// other sessions get mcp-go's copy with a POST response, queued again
// if mcp-go drops it (see redelivery).
func (e *Edge) AnnounceToolsChanged(change func()) {
	sessions := e.listeners.expectBroadcast()
	e.redeliver.expect(sessions)
	change()
	e.redeliver.arm()
	e.listeners.deliverBroadcast(sessions, listChanged)
}

// registerStandalone keeps the hub's and the redelivery's books with
// mcp-go's session events: an ended session is forgotten, and a
// broadcast mcp-go could not queue (the session's queue was full) is
// owed by the stream no longer.
func (e *Edge) registerStandalone(hooks *server.Hooks) {
	e.redeliver = newRedelivery(func(session string) { e.queueNotification(session, listChanged) })
	e.cfg.Metrics.MustRegister(e.redeliver.redelivered)
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) { e.redeliver.register(s) })
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		e.listeners.forget(s.SessionID())
		e.redeliver.unregister(s.SessionID())
	})
	hooks.AddOnError(func(_ context.Context, _ any, method mcp.MCPMethod, message any, err error) {
		fields, _ := message.(map[string]any)
		session, _ := fields["sessionID"].(string)
		if method == "notification" && fields["method"] == mcp.MethodNotificationToolsListChanged && session != "" &&
			errors.Is(err, server.ErrNotificationChannelBlocked) {
			e.listeners.missedBroadcast(session)
		}
	})
}
