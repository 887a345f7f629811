package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runner/egress"
	"github.com/sandgate/sandgate/runner/protocol"
)

// Server serves the runner protocol. One Server lives for the whole
// sandbox; connections come and go (a gateway restart reconnects), while
// background processes belong to the Server and outlive any connection.
type Server struct {
	ops      registry
	egress   *egress.Link
	features string
	log      *slog.Logger
}

// NewServer returns a Server dispatching to svc.
func NewServer(svc Services, log *slog.Logger) *Server {
	f := features
	if svc.Gate != nil {
		f += "," + protocol.FeatureCheckpoint
	}
	return &Server{ops: handlers(svc), egress: svc.Egress, features: f, log: log}
}

// serveEgress takes over the connection for the gateway's egress session
// (see protocol.EgressPath) and serves it until it ends.
func (s *Server) serveEgress(w http.ResponseWriter, r *http.Request) {
	if s.egress == nil || !strings.EqualFold(r.Header.Get("Upgrade"), protocol.EgressUpgrade) {
		http.Error(w, "this runner has no egress, or the request is not an egress upgrade", http.StatusBadRequest)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.log.Warn("take over the egress connection", "error", err)
		return
	}
	if brw.Reader.Buffered() > 0 {
		// The gateway waits for the 101 before it speaks; bytes here
		// mean a confused peer.
		conn.Close()
		return
	}
	_, err = fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %d\r\n\r\n",
		protocol.EgressUpgrade, protocol.VersionHeader, protocol.Version)
	if err != nil {
		conn.Close()
		return
	}
	if err := s.egress.Serve(conn); err != nil {
		s.log.Warn("egress session", "error", err)
	}
}

// features is what this runner announces in protocol.FeaturesHeader: the
// additions to the protocol that a gateway must not use with a runner
// built before them (one still running in a sandbox across an upgrade).
const features = protocol.FeatureIngress + "," + protocol.FeaturePayload + "," + protocol.FeatureOutputWait + "," + protocol.FeatureAppend + "," + protocol.FeatureWatch + "," + protocol.FeatureWatchEvents + "," + protocol.FeatureInterpStream

// ServeHTTP upgrades a request on protocol.Path to a websocket after
// checking the protocol version, then serves it until it closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != protocol.Path && r.URL.Path != protocol.EgressPath && r.URL.Path != protocol.IngressPath {
		http.NotFound(w, r)
		return
	}
	w.Header().Set(protocol.VersionHeader, strconv.Itoa(protocol.Version))
	w.Header().Set(protocol.FeaturesHeader, s.features)
	if got := r.Header.Get(protocol.VersionHeader); got != strconv.Itoa(protocol.Version) {
		http.Error(w, fmt.Sprintf("protocol version mismatch: runner speaks %d, gateway asked for %q; rebuild the gateway and the runner from the same source (make build)", protocol.Version, got), http.StatusUpgradeRequired)
		return
	}
	switch r.URL.Path {
	case protocol.EgressPath:
		s.serveEgress(w, r)
		return
	case protocol.IngressPath:
		s.serveIngress(w, r)
		return
	}
	// The socket is only reachable by the gateway, which sends no Origin;
	// origin checks would add nothing.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.log.Warn("accept runner connection", "error", err)
		return
	}
	conn.SetReadLimit(protocol.MaxFrameBytes)
	// The session outlives the request, but keeps its values (the
	// connection, for protocol.OpCheckpointPrepare).
	newSession(context.WithoutCancel(r.Context()), conn, s.ops, s.log).serve()
}

// session is one gateway connection.
type session struct {
	conn *websocket.Conn
	ops  registry
	log  *slog.Logger

	// life ends when the connection does. Every request's context derives
	// from it, so a lost gateway connection kills the foreground processes
	// it started (nobody is left to receive their output). Background
	// processes are not tied to it.
	life   context.Context
	cancel context.CancelFunc

	inflight *inflight
}

func newSession(parent context.Context, conn *websocket.Conn, ops registry, log *slog.Logger) *session {
	life, cancel := context.WithCancel(parent)
	return &session{conn: conn, ops: ops, log: log, life: life, cancel: cancel, inflight: newInflight()}
}

func (s *session) serve() {
	defer s.cancel()
	defer s.inflight.wait()
	for {
		frame, payload, err := protocol.ReadMessage(s.life, s.conn)
		if errors.Is(err, protocol.ErrMalformed) {
			_ = s.conn.Close(websocket.StatusProtocolError, "bad request message")
			return
		}
		if err != nil {
			return
		}
		var req protocol.Request
		if err := protocol.Unmarshal(frame, &req); err != nil {
			_ = s.conn.Close(websocket.StatusProtocolError, "bad request frame")
			return
		}
		req.Payload = payload
		if req.Op == protocol.OpCancel {
			s.cancelRequest(req)
			continue
		}
		ctx, cancel := context.WithCancel(s.life)
		if !s.inflight.add(req.ID, cancel) {
			cancel()
			s.send(protocol.Event{ID: req.ID, Type: protocol.EventEnd, Error: protocol.Errorf(protocol.CodeInvalid, "request id %d is already in use", req.ID)})
			continue
		}
		go s.handle(ctx, req)
	}
}

func (s *session) cancelRequest(req protocol.Request) {
	var c protocol.CancelRequest
	if err := json.Unmarshal(req.Params, &c); err == nil {
		s.inflight.cancel(c.Target)
	}
	s.send(protocol.Event{ID: req.ID, Type: protocol.EventEnd, Result: json.RawMessage("{}")})
}

func (s *session) handle(ctx context.Context, req protocol.Request) {
	defer s.inflight.done(req.ID)
	end := protocol.Event{ID: req.ID, Type: protocol.EventEnd}
	h, ok := s.ops[req.Op]
	if !ok {
		end.Error = protocol.Errorf(protocol.CodeUnsupported, "unknown operation %q; the gateway and runner versions differ", req.Op)
		s.send(end)
		return
	}
	emit := func(ev protocol.Event) {
		ev.ID = req.ID
		s.send(ev)
	}
	res, err := h(ctx, req, emit)
	if err != nil {
		end.Error = toProtocolError(err)
		s.send(end)
		return
	}
	if _, ok := res.(closeAfter); ok {
		// The answer first, then the close the caller waits for.
		if frame, err := protocol.EncodeEvent(end, struct{}{}); err == nil {
			s.write(frame)
		}
		_ = s.conn.CloseNow()
		return
	}
	out, hasPayload := res.(payloadResult)
	if hasPayload {
		res = out.result
	}
	frame, err := protocol.EncodeEvent(end, res)
	if err != nil {
		end.Error = protocol.Errorf(protocol.CodeInternal, "encode %s result: %v", req.Op, err)
		s.send(end)
		return
	}
	if hasPayload {
		if err := protocol.WritePayload(s.life, s.conn, frame, out.payload); err != nil {
			s.cancel()
		}
		return
	}
	s.write(frame)
}

// send writes one event. coder/websocket serialises concurrent writers; a
// failed write means the connection is gone, which serve notices.
func (s *session) send(ev protocol.Event) {
	frame, err := protocol.EncodeEvent(ev, ev.Result)
	if err != nil {
		s.log.Error("encode event", "request_id", ev.ID, "error", err)
		return
	}
	s.write(frame)
}

func (s *session) write(frame []byte) {
	if err := s.conn.Write(s.life, websocket.MessageText, frame); err != nil {
		s.cancel()
	}
}
