// Package mcpws serves MCP over WebSocket (/mcp/ws): one JSON-RPC
// message per text frame each way, under the "mcp" subprotocol, as the
// TypeScript SDK's WebSocketClientTransport speaks it.
//
// A connection is a bridge to the gateway's Streamable HTTP handler, in
// process: each message the client sends becomes a POST to that handler
// carrying the upgrade's credentials, origin and address and the
// connection's session id, and whatever the handler answers (a JSON
// body, or an SSE stream of progress, log messages and the result) goes
// back as frames, message by message, as it is written. A WebSocket
// session therefore has the authentication, scopes, sessions, limits,
// notifications and audit records of an HTTP one, because it is one:
// nothing here decides anything the HTTP edge decides. What is the
// bridge's own:
//
//   - the bearer token is checked on the upgrade (a 401 with the same
//     WWW-Authenticate challenge as /mcp), and again with every message,
//     so a connection whose token expires or is revoked is closed
//     (policy violation) and the client reconnects with a fresh one;
//   - requests run concurrently, at most MaxInFlight at once per
//     connection; one beyond that is refused at once with a JSON-RPC
//     error, and reading goes on, so a client can still cancel.
//     Notifications and responses are posted in the order they come;
//   - the session's standalone stream (notifications outside any call:
//     list changes, resource updates) is opened once the session exists
//     and forwarded;
//   - when the connection ends, its calls are cancelled and its session
//     (legacy eras) is ended with a DELETE, as a client that closes an
//     HTTP session does; when the session ends first (idle, or the
//     gateway stopping), the connection is closed, saying so;
//   - pings every PingInterval find a dead peer.
package mcpws

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Subprotocol is the WebSocket subprotocol of MCP.
const Subprotocol = "mcp"

// Defaults of Config.
const (
	DefaultMaxInFlight  = 32
	DefaultPingInterval = 30 * time.Second
)

// Config configures the WebSocket endpoint.
type Config struct {
	// MCP is the gateway's /mcp handler, with all of its middleware.
	MCP http.Handler
	// Path is where MCP is served (its requests' URL path): "/mcp".
	Path string
	// Authenticate wraps the upgrade in the bearer check of /mcp; nil
	// when authentication is off.
	Authenticate func(http.Handler) http.Handler
	// OriginAllowed is /mcp's origin check, applied to the upgrade.
	OriginAllowed func(*http.Request) bool
	// MaxMessageBytes bounds one message from the client (/mcp's body
	// limit).
	MaxMessageBytes int64
	// MaxInFlight bounds the messages of one connection being served at
	// once; 0 is DefaultMaxInFlight.
	MaxInFlight int
	// PingInterval is how often an idle peer is pinged; 0 is
	// DefaultPingInterval.
	PingInterval time.Duration
	Log          *slog.Logger
}

// Handler returns the /mcp/ws handler.
func Handler(cfg Config) http.Handler {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(cfg, w, r) })
	if cfg.Authenticate != nil {
		h = cfg.Authenticate(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cfg.OriginAllowed != nil && !cfg.OriginAllowed(r) {
			http.Error(w, "Forbidden: foreign Origin "+r.Header.Get("Origin"), http.StatusForbidden)
			return
		}
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			w.Header().Set("Upgrade", "websocket")
			http.Error(w, "MCP over WebSocket: open a WebSocket (subprotocol \"mcp\") here; for Streamable HTTP, use "+cfg.Path, http.StatusUpgradeRequired)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serve upgrades an authenticated request and runs the connection.
func serve(cfg Config, w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{Subprotocol},
		// The origin was checked above, with /mcp's rule.
		InsecureSkipVerify: true,
	})
	if err != nil {
		return // Accept answered the client
	}
	conn.SetReadLimit(cfg.MaxMessageBytes)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	b := &bridge{cfg: cfg, conn: conn, upgrade: r, ctx: ctx, cancel: cancel, slots: make(chan struct{}, cfg.MaxInFlight), opened: time.Now()}
	b.run()
}

// bridge is one WebSocket connection.
type bridge struct {
	cfg     Config
	conn    *websocket.Conn
	upgrade *http.Request // the upgrade: credentials, origin, address
	// ctx is the connection's calls' context, cancelled when it ends.
	ctx    context.Context
	cancel context.CancelFunc
	slots  chan struct{} // one per request being served
	calls  sync.WaitGroup
	opened time.Time

	mu       sync.Mutex
	session  string // Mcp-Session-Id, once the handler gave one
	version  string // the negotiated protocol version
	streamed bool   // the standalone stream was opened
	closing  *websocket.CloseError
}

// run reads the client's messages until the connection ends. Read is
// given no deadline of its own: closing the connection (close) ends it.
func (b *bridge) run() {
	defer b.end()
	go b.ping()
	for {
		typ, data, err := b.conn.Read(context.WithoutCancel(b.ctx))
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			b.close(websocket.StatusUnsupportedData, "send each JSON-RPC message as a text frame")
			return
		}
		var head rpcHead
		if err := json.Unmarshal(data, &head); err != nil {
			b.send(rpcError(nil, -32700, "parse error: each frame must be one JSON-RPC message: "+err.Error()))
			continue
		}
		if head.Method == "" || len(head.ID) == 0 {
			b.forward(head, data) // a notification or a response: quick, and in order
			continue
		}
		select {
		case b.slots <- struct{}{}:
		default:
			b.send(rpcError(head.ID, codeRefused, fmt.Sprintf("too many requests in flight on this connection (%d): wait for answers, or open another connection", cap(b.slots))))
			continue
		}
		b.calls.Add(1)
		go func() {
			defer func() { <-b.slots; b.calls.Done() }()
			b.forward(head, data)
		}()
	}
}

// end cancels the connection's calls, ends its session and closes it.
func (b *bridge) end() {
	b.cancel()
	b.calls.Wait()
	b.mu.Lock()
	session, closing := b.session, b.closing
	b.mu.Unlock()
	if session != "" {
		// As a client that closes its HTTP session: the edge ends it
		// (and its sandbox goes as a session's does).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), time.Minute)
		defer cancel()
		b.cfg.MCP.ServeHTTP(&frames{to: b, standalone: true}, b.request(ctx, http.MethodDelete, nil))
	}
	code, reason := websocket.StatusNormalClosure, ""
	if closing != nil {
		code, reason = closing.Code, closing.Reason
	}
	_ = b.conn.Close(code, reason)
	if b.cfg.Log != nil {
		b.cfg.Log.Info("MCP WebSocket closed", "session_id", session, "code", int(code), "reason", reason,
			"duration_ms", time.Since(b.opened).Milliseconds())
	}
}

// close ends the connection with code and reason, once: its calls are
// cancelled, and the close handshake ends the read loop.
func (b *bridge) close(code websocket.StatusCode, reason string) {
	b.mu.Lock()
	first := b.closing == nil
	if first {
		b.closing = &websocket.CloseError{Code: code, Reason: reason}
	}
	b.mu.Unlock()
	if first {
		b.cancel()
		go func() { _ = b.conn.Close(code, reason) }()
	}
}

// ping pings the peer every PingInterval; one that does not answer
// within the interval is gone.
func (b *bridge) ping() {
	t := time.NewTicker(b.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.PingInterval)
		err := b.conn.Ping(ctx)
		cancel()
		if err != nil && b.ctx.Err() == nil {
			b.close(websocket.StatusGoingAway, "no answer to a ping")
			return
		}
	}
}

// rpcHead is what the bridge reads of a JSON-RPC message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
}

// forward posts one client message to the MCP handler and sends back
// what it answers.
func (b *bridge) forward(head rpcHead, data []byte) {
	out := &frames{to: b, initialize: head.Method == "initialize"}
	b.cfg.MCP.ServeHTTP(out, b.request(b.ctx, http.MethodPost, data))
	out.finish(head)
	if head.Method == "notifications/initialized" {
		b.openStream()
	}
}

// request is a request to the MCP handler on behalf of the connection.
func (b *bridge) request(ctx context.Context, method string, body []byte) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, method, b.cfg.Path, bytes.NewReader(body)) // a fixed path parses
	if body == nil {
		r.Body = http.NoBody
	}
	r.Host, r.RemoteAddr, r.Proto, r.ProtoMajor, r.ProtoMinor = b.upgrade.Host, b.upgrade.RemoteAddr, "HTTP/1.1", 1, 1
	for _, k := range []string{"Authorization", "Origin", "User-Agent", "X-Forwarded-For"} {
		if v := b.upgrade.Header.Get(k); v != "" {
			r.Header.Set(k, v)
		}
	}
	r.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	b.mu.Lock()
	if b.session != "" {
		r.Header.Set("Mcp-Session-Id", b.session)
	}
	if b.version != "" {
		r.Header.Set("Mcp-Protocol-Version", b.version)
	}
	b.mu.Unlock()
	return r
}

// openStream opens the session's standalone stream once, and forwards
// it until the connection ends. A sessionless era has none (the handler
// refuses the GET), and nothing is forwarded.
func (b *bridge) openStream() {
	b.mu.Lock()
	if b.streamed || b.session == "" {
		b.mu.Unlock()
		return
	}
	b.streamed = true
	b.mu.Unlock()
	b.calls.Add(1)
	go func() {
		defer b.calls.Done()
		r := b.request(b.ctx, http.MethodGet, nil)
		r.Header.Set("Accept", "text/event-stream")
		stream := &frames{to: b, standalone: true}
		b.cfg.MCP.ServeHTTP(stream, r)
		if (stream.sse || stream.status == http.StatusNotFound) && b.ctx.Err() == nil {
			// The edge ended the session's stream, or no longer knows
			// the session: it is over.
			b.close(websocket.StatusGoingAway, "the MCP session ended (idle, or the gateway is stopping): reconnect for a new one")
		}
	}()
}

// send writes one message to the client (Conn.Write may be called
// concurrently). Nothing goes out once the connection is closing. The
// write has a context of its own: the library drops the connection
// without a close frame when a write's context ends, which the calls'
// context does when the connection closes. A client that takes longer
// than writeTimeout to take one message is gone.
func (b *bridge) send(msg []byte) {
	if b.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), writeTimeout)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		b.close(websocket.StatusInternalError, "write failed")
	}
}

// writeTimeout bounds the write of one message: a 64 MiB file read at
// half a megabyte a second.
const writeTimeout = 2 * time.Minute

// sink is where frames sends: the bridge (a test's recorder).
type sink interface {
	send(msg []byte)
	close(code websocket.StatusCode, reason string)
	context() context.Context
	initialized(session, version string)
}

func (b *bridge) context() context.Context { return b.ctx }

// initialized keeps the session and protocol version initialize gave,
// for every later request of the connection.
func (b *bridge) initialized(session, version string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.session == "" {
		b.session = session
	}
	if b.version == "" {
		b.version = version
	}
}

// frames is the http.ResponseWriter the MCP handler answers one bridged
// request into: an SSE body is sent on event by event, as it is
// written; any other body is kept for finish.
type frames struct {
	to         sink
	header     http.Header
	status     int
	sse        bool
	pending    []byte       // SSE bytes not yet a whole event
	scanned    int          // of pending, the bytes known to hold no event end
	body       bytes.Buffer // a non-SSE body
	initialize bool         // the request is initialize: note its version
	standalone bool         // the standalone stream: drop what is not SSE
}

func (f *frames) Header() http.Header {
	if f.header == nil {
		f.header = http.Header{}
	}
	return f.header
}

func (f *frames) WriteHeader(status int) {
	if f.status != 0 {
		return
	}
	f.status = status
	f.sse = status == http.StatusOK && strings.HasPrefix(f.Header().Get("Content-Type"), "text/event-stream")
}

func (f *frames) Write(p []byte) (int, error) {
	f.WriteHeader(http.StatusOK)
	if err := f.to.context().Err(); err != nil {
		return 0, err
	}
	if !f.sse {
		if f.standalone {
			return len(p), nil
		}
		if int64(f.body.Len()+len(p)) > maxAnswerBytes {
			return 0, errors.New("answer too large for the WebSocket bridge")
		}
		return f.body.Write(p)
	}
	if len(f.pending)+len(p) > maxAnswerBytes {
		return 0, errors.New("event too large for the WebSocket bridge")
	}
	f.pending = append(f.pending, p...)
	for {
		// A large result comes in many writes: look for the event's end
		// only in what is new (and the byte before it).
		from := max(f.scanned-2, 0)
		end, next := eventEnd(f.pending[from:])
		if end < 0 {
			f.scanned = len(f.pending)
			return len(p), nil
		}
		if data := eventData(f.pending[:from+end]); len(data) > 0 {
			f.note(data)
			f.to.send(data)
		}
		f.pending, f.scanned = f.pending[from+next:], 0
	}
}

// Flush is a no-op: every whole event is sent as it is written.
func (f *frames) Flush() {}

// maxAnswerBytes bounds a JSON answer the bridge holds before sending:
// well above the largest result (a 64 MiB file read, in JSON).
const maxAnswerBytes = 256 << 20

// note tells the bridge the session and protocol version of an
// initialize result, before the result goes out: the client's next
// message may come as soon as it has it.
func (f *frames) note(msg []byte) {
	if !f.initialize {
		return
	}
	var head rpcHead
	if json.Unmarshal(msg, &head) == nil && head.Result != nil {
		f.to.initialized(f.Header().Get("Mcp-Session-Id"), head.Result.ProtocolVersion)
	}
}

// finish sends what a non-SSE answer to the client message head holds:
// a JSON-RPC message as it is; for a request, any other failure as a
// JSON-RPC error that says what the HTTP edge said. An answer of 401
// (the token expired or was revoked) closes the connection.
func (f *frames) finish(head rpcHead) {
	if f.status == 0 {
		f.status = http.StatusOK
	}
	if f.sse {
		return
	}
	body := bytes.TrimSpace(f.body.Bytes())
	switch {
	case f.status == http.StatusUnauthorized:
		f.to.close(websocket.StatusPolicyViolation, "the bearer token is no longer accepted: reconnect with a fresh one")
		return
	case len(body) > 0 && json.Valid(body) && isMessage(body):
		f.note(body)
		f.to.send(body)
		return
	case f.status < 300 || len(head.ID) == 0:
		return // accepted (a notification or a response), or nobody to tell
	}
	msg := http.StatusText(f.status)
	if len(body) > 0 {
		msg += ": " + string(body)
	}
	if c := f.Header().Get("WWW-Authenticate"); c != "" {
		msg += " (" + c + ")"
	}
	f.to.send(rpcError(head.ID, codeRefused, msg))
}

// codeRefused is the JSON-RPC error code of a request the HTTP edge
// refused without a JSON-RPC answer (a missing scope, an unknown
// session, a body too large): the message says which and why.
const codeRefused = -32600

// isMessage reports whether body is a JSON-RPC message (an object with
// "jsonrpc"), not some other JSON.
func isMessage(body []byte) bool {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(body, &m) == nil && m.JSONRPC == "2.0"
}

// eventEnd finds the blank line that ends the first SSE event in buf
// (lines end in LF or CRLF): the event is buf[:end], and the next one
// starts at next; end is -1 when buf holds no whole event.
func eventEnd(buf []byte) (end, next int) {
	lf := bytes.Index(buf, []byte("\n\n"))
	crlf := bytes.Index(buf, []byte("\n\r\n"))
	switch {
	case lf < 0 && crlf < 0:
		return -1, 0
	case crlf < 0 || lf >= 0 && lf < crlf:
		return lf, lf + 2
	}
	return crlf, crlf + 3
}

// eventData is the data of one SSE event (its data lines joined), or
// nil for an event without data (a comment, a keep-alive).
func eventData(event []byte) []byte {
	var data [][]byte
	sc := bufio.NewScanner(bytes.NewReader(event))
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswerBytes)
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	return bytes.Join(data, []byte("\n"))
}

// rpcError is a JSON-RPC error response to id (null when unknown).
func rpcError(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return out
}
