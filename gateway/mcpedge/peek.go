package mcpedge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// modernVersion is the first protocol version without sessions.
const modernVersion = mcp.ProtocolVersion20260728

// rpcMessage is the little the edge needs to know about a JSON-RPC message
// before mcp-go parses it properly: which method, which tool, which era.
type Message struct {
	Method string `json:"method"`
	ID     any    `json:"id"`
	Params struct {
		Name string         `json:"name"`
		Meta map[string]any `json:"_meta"`
		URI  string         `json:"uri"` // resources/read, subscribe
		Ref  struct {       // completion/complete
			Type string `json:"type"`
			URI  string `json:"uri"`
			Name string `json:"name"`
		} `json:"ref"`
		Argument struct {
			Name string `json:"name"`
		} `json:"argument"`
		Notifications struct { // subscriptions/listen
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	} `json:"params"`
	// args are a tools/call's decoded arguments when the edge took them
	// out of the body (see splitToolCall); nil otherwise.
	Args  map[string]any
	batch bool // the body is a JSON array
	// problem, when code is not 0, is a shape mcp-go would answer vaguely
	// or not at all; the edge answers it with this JSON-RPC error.
	problem struct {
		code    int
		message string
	}
}

// shape is what peekMessage checks beyond rpcMessage: which members are
// present at all, and the raw params.
type shape struct {
	Method *json.RawMessage `json:"method"`
	Result *json.RawMessage `json:"result"`
	Error  *json.RawMessage `json:"error"`
	Params json.RawMessage  `json:"params"`
}

// peekMessage reads r's body (bounded by the MaxBytesReader the caller
// installed), puts it back for the next handler (a tools/call without its
// arguments, which it returns decoded: see splitToolCall), and decodes
// what it can.
// A body that is not a JSON-RPC object decodes to a zero message; mcp-go
// answers it with the precise JSON-RPC error.
func peekMessage(r *http.Request) (Message, error) {
	var msg Message
	if r.Method != http.MethodPost || r.Body == nil {
		return msg, nil
	}
	body, err := readBody(r)
	if err != nil {
		return msg, err
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		msg.batch = true
		r.Body = io.NopCloser(bytes.NewReader(body))
		return msg, nil
	}
	if call, rest, ok := splitToolCall(body); ok {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(rest)), int64(len(rest))
		return call, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	_ = json.Unmarshal(body, &msg)
	var sh shape
	if json.Unmarshal(body, &sh) == nil {
		msg.checkShape(sh)
	}
	return msg, nil
}

// readBody reads r's whole body into one buffer sized by Content-Length
// when the client sent one (the caller has already refused one above the
// limit), rather than growing it by doubling: for a body of megabytes
// that is several copies and as many garbage buffers fewer.
func readBody(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= MaxBodyBytes {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}

// checkShape records the two malformed shapes mcp-go answers imprecisely:
// an object that is neither a request nor a response (mcp-go accepts it
// with 202 as if it were a response), and tools/call params that are not
// {"name": string, ...} (mcp-go says -32600 where JSON-RPC says -32602).
func (m *Message) checkShape(sh shape) {
	switch {
	case sh.Method == nil && sh.Result == nil && sh.Error == nil:
		m.problem.code, m.problem.message = mcp.INVALID_REQUEST, `invalid request: a JSON-RPC request needs a "method" (and a response a "result" or "error")`
	case m.Method == "tools/call":
		var p map[string]json.RawMessage
		var name string
		if json.Unmarshal(sh.Params, &p) != nil || p == nil || json.Unmarshal(p["name"], &name) != nil || name == "" {
			m.problem.code, m.problem.message = mcp.INVALID_PARAMS, `invalid params: tools/call needs params {"name": "<tool>", "arguments": {...}}`
		}
	}
}

// writeBatchError refuses a JSON-RPC batch precisely: MCP 2025-06-18
// removed batching, and mcp-go would call the array "not valid json".
func writeBatchError(w http.ResponseWriter) {
	writeRPCError(w, nil, mcp.INVALID_REQUEST, "JSON-RPC batches are not supported since MCP 2025-06-18: send one message per request")
}

// writeRPCError answers with a JSON-RPC error for request id.
func writeRPCError(w http.ResponseWriter, id any, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
}

// needsSession reports whether a legacy-era message must carry a session
// id: everything but the handshakes that create or precede one.
func (m Message) needsSession() bool {
	switch m.Method {
	case "", "initialize", "server/discover":
		return false
	}
	return true
}

func (m Message) metaVersion() string {
	v, _ := m.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// writeBodyError answers a body that could not be read: 413 when it was
// too large, 400 otherwise.
func writeBodyError(w http.ResponseWriter, err error, timeout time.Duration) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		http.Error(w, fmt.Sprintf("request body is above the %d byte limit", tooBig.Limit), http.StatusRequestEntityTooLarge)
		return
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		http.Error(w, fmt.Sprintf("request body not received within %s; send it at a steady pace", timeout), http.StatusRequestTimeout)
		return
	}
	http.Error(w, "read request body: "+err.Error(), http.StatusBadRequest)
}
