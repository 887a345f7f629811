package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// protocolVersion is the MCP revision this test speaks: a session era one,
// so that the sandbox lives exactly as long as the Mcp-Session-Id.
const protocolVersion = "2025-11-25"

// mcpSession is a minimal Streamable HTTP MCP client, written against the
// wire format rather than an SDK so that the test sees what any client
// sees through the deployed gateway.
type mcpSession struct {
	url    string
	token  string // OAuth access token sent as a bearer
	id     string // Mcp-Session-Id, set by initialize
	nextID int
	hc     *http.Client
}

// rpcMessage is one JSON-RPC message of a response: the reply or, on an
// SSE stream, a notification before it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// toolResult is the part of a tools/call result the test checks.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	} `json:"structuredContent"`
}

// initialize opens a session at url: initialize, then
// notifications/initialized.
func initialize(t *testing.T, url, token string) *mcpSession {
	t.Helper()
	s := &mcpSession{url: url, token: token, hc: &http.Client{Timeout: 2 * time.Minute}}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	resp := s.call(t, "initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "sandgate-compose-test", "version": "1"},
	}, &res)
	if s.id = resp.Header.Get("Mcp-Session-Id"); s.id == "" {
		t.Fatal("initialize: response carries no Mcp-Session-Id")
	}
	if res.ProtocolVersion != protocolVersion {
		t.Fatalf("initialize: server chose protocol %q, want %q", res.ProtocolVersion, protocolVersion)
	}
	resp = s.post(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %s, want 202", resp.Status)
	}
	return s
}

// callTool runs one tool and returns its result; a JSON-RPC error fails t.
func (s *mcpSession) callTool(t *testing.T, name string, args map[string]any) toolResult {
	t.Helper()
	var res toolResult
	s.call(t, "tools/call", map[string]any{"name": name, "arguments": args}, &res)
	return res
}

// call sends one request and decodes the matching reply's result into out.
func (s *mcpSession) call(t *testing.T, method string, params, out any) *http.Response {
	t.Helper()
	s.nextID++
	resp := s.post(t, map[string]any{"jsonrpc": "2.0", "id": s.nextID, "method": method, "params": params})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		t.Fatalf("%s: status %s: %s", method, resp.Status, body)
	}
	msg := readReply(t, resp, strconv.Itoa(s.nextID))
	if msg.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d: %s", method, msg.Error.Code, msg.Error.Message)
	}
	if err := json.Unmarshal(msg.Result, out); err != nil {
		t.Fatalf("%s: decode result %s: %v", method, msg.Result, err)
	}
	return resp
}

func (s *mcpSession) post(t *testing.T, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", s.url, err)
	}
	return resp
}

// readReply returns the message with JSON-RPC id from a response that is
// either one JSON message or an SSE stream (notifications, then the reply).
func readReply(t *testing.T, resp *http.Response, id string) rpcMessage {
	t.Helper()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		var msg rpcMessage
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			t.Fatalf("decode JSON reply: %v", err)
		}
		return msg
	}
	if mt != "text/event-stream" {
		t.Fatalf("reply has Content-Type %q, want JSON or SSE", mt)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20) // one event holds a whole tool result
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			if data.Len() > 0 {
				data.WriteByte('\n') // SSE joins an event's data lines with newlines
			}
			data.WriteString(strings.TrimPrefix(v, " "))
			continue
		}
		if line != "" || data.Len() == 0 {
			continue // event:, id:, comments, or a blank line without data
		}
		var msg rpcMessage
		if err := json.Unmarshal([]byte(data.String()), &msg); err != nil {
			t.Fatalf("decode SSE event %q: %v", data.String(), err)
		}
		data.Reset()
		if string(msg.ID) == id {
			return msg
		}
	}
	t.Fatalf("SSE stream ended without a reply to id %s (scan error: %v)", id, sc.Err())
	return rpcMessage{}
}

// close ends the session with DELETE, which removes its sandbox.
func (s *mcpSession) close(t *testing.T) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatalf("DELETE %s: %v", s.url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE session %s: %s", s.url, resp.Status)
	}
}
