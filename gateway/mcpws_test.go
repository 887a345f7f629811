package gateway_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/mcpedge"
	"github.com/sandgate/sandgate/sandbox"
)

// wsClient is a raw MCP-over-WebSocket client: one JSON-RPC message per
// text frame, and whatever the gateway sends that is not the answer
// awaited kept in order.
type wsClient struct {
	t      *testing.T
	conn   *websocket.Conn
	nextID int
	seen   []wsMessage // every message received, in order
}

type wsMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// dialWS opens /mcp/ws of the gateway at mcpURL (its /mcp URL) with
// header, under the mcp subprotocol.
func dialWS(t *testing.T, mcpURL string, header http.Header) (*wsClient, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(mcpURL, "http") + "/ws"
	conn, resp, err := websocket.Dial(t.Context(), u, &websocket.DialOptions{Subprotocols: []string{"mcp"}, HTTPHeader: header})
	if err != nil {
		return nil, resp, err
	}
	conn.SetReadLimit(128 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &wsClient{t: t, conn: conn}, resp, nil
}

// send sends one message.
func (c *wsClient) send(msg map[string]any) {
	c.t.Helper()
	msg["jsonrpc"] = "2.0"
	data, _ := json.Marshal(msg)
	if err := c.conn.Write(c.t.Context(), websocket.MessageText, data); err != nil {
		c.t.Fatalf("send %v: %v", msg["method"], err)
	}
}

// request sends a request and returns its id.
func (c *wsClient) request(method string, params any) string {
	c.nextID++
	id := fmt.Sprint(c.nextID)
	c.send(map[string]any{"id": id, "method": method, "params": params})
	return id
}

// await reads until the answer to request id, within a minute.
func (c *wsClient) await(id string) wsMessage {
	c.t.Helper()
	want, _ := json.Marshal(id)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		m := c.read()
		if string(m.ID) == string(want) && m.Method == "" {
			return m
		}
	}
	c.t.Fatalf("no answer to request %s within a minute; seen %d messages", id, len(c.seen))
	return wsMessage{}
}

// read reads one message.
func (c *wsClient) read() wsMessage {
	c.t.Helper()
	typ, data, err := c.conn.Read(c.t.Context())
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		c.t.Fatalf("a %v frame; want text", typ)
	}
	var m wsMessage
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("frame %q is not one JSON-RPC message: %v", data, err)
	}
	c.seen = append(c.seen, m)
	return m
}

// call requests method and fails the test on a JSON-RPC error.
func (c *wsClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	m := c.await(c.request(method, params))
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	return m.Result
}

// initialize opens the MCP session.
func (c *wsClient) initialize(version string) string {
	c.t.Helper()
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	res := c.call("initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "ws-test", "version": "1"}})
	if err := json.Unmarshal(res, &init); err != nil {
		c.t.Fatal(err)
	}
	c.send(map[string]any{"method": "notifications/initialized"})
	return init.ProtocolVersion
}

// toolResult is the part of a tools/call result the tests read.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured map[string]any `json:"structuredContent"`
}

func (c *wsClient) tool(name string, args map[string]any, meta map[string]any) toolResult {
	c.t.Helper()
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	var r toolResult
	if err := json.Unmarshal(c.call("tools/call", params), &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// TestMCPWebSocket: MCP over WebSocket (/mcp/ws) is a session of the
// gateway like any other: initialize, tools/list, a run_shell whose
// output streams as progress before its result, two calls in flight at
// once (the first waits for a file the second writes), and the end of
// the connection ends the session, audited, and its sandbox with it.
// A binary frame and a message above the body limit close the
// connection with the codes that say so.
func TestMCPWebSocket(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c, resp, err := dialWS(t, tg.URL, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "mcp" {
		t.Errorf("subprotocol %q, want mcp", got)
	}
	if v := c.initialize("2025-06-18"); v != "2025-06-18" {
		t.Fatalf("negotiated %q", v)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.call("tools/list", map[string]any{}), &list); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "run_shell") || !slices.Contains(names, "write_file") {
		t.Fatalf("tools/list: %v", names)
	}

	// Two calls at once: the first prints, then waits for a file that
	// the second writes. Its first output arrives as progress while it
	// runs; the second is answered while the first still waits.
	waiting := c.request("tools/call", map[string]any{"name": "run_shell",
		"arguments": map[string]any{"command": "echo one; while [ ! -e .go ]; do sleep 0.05; done; echo two"},
		"_meta":     map[string]any{"progressToken": "p1"}})
	for progressed := false; !progressed; {
		m := c.read()
		if m.Method == "" && len(m.ID) > 0 {
			t.Fatalf("an answer before the call's first progress: %+v", m)
		}
		progressed = m.Method == "notifications/progress" && strings.Contains(string(m.Params), `"p1"`)
	}
	if w := c.tool("write_file", map[string]any{"path": ".go", "content": "go"}, nil); w.IsError {
		t.Fatalf("write_file while run_shell waits: %+v", w)
	}
	var shellRes toolResult
	if m := c.await(waiting); m.Error != nil || json.Unmarshal(m.Result, &shellRes) != nil || shellRes.IsError ||
		shellRes.Structured["stdout"] != "one\ntwo\n" {
		t.Fatalf("run_shell: %+v %+v", m, shellRes)
	}

	// The connection ends: so do its session and the session's sandbox.
	if infos, _ := tg.Local.List(t.Context(), sandbox.Filter{}); len(infos) != 1 {
		t.Fatalf("sandboxes during the session: %+v; want its one", infos)
	}
	if err := c.conn.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the session's end", func() bool {
		for _, e := range auditRecords(t, tg.AuditPath) {
			if e.Kind == audit.KindSessionEnd {
				return true
			}
		}
		return false
	})
	waitFor(t, time.Minute, "the session's sandbox to go", func() bool {
		infos, _ := tg.Local.List(t.Context(), sandbox.Filter{})
		return len(infos) == 0
	})

	for _, tc := range []struct {
		name  string
		typ   websocket.MessageType
		bytes int
		want  websocket.StatusCode
	}{
		{"a binary frame", websocket.MessageBinary, 10, websocket.StatusUnsupportedData},
		{"a message above the body limit", websocket.MessageText, mcpedge.MaxBodyBytes + 1, websocket.StatusMessageTooBig},
	} {
		c, _, err := dialWS(t, tg.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.conn.Write(t.Context(), tc.typ, make([]byte, tc.bytes))
		_, _, err = c.conn.Read(t.Context())
		if got := websocket.CloseStatus(err); got != tc.want {
			t.Errorf("%s: the connection ends with %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestMCPWebSocketAuth: the upgrade takes /mcp's bearer check (401 with
// its challenge without a token) and origin check (403); a plain GET is
// told to upgrade (426); a token's scopes hold per message (run_shell
// without sandbox:exec is refused, naming the scope, and the session
// goes on).
func TestMCPWebSocketAuth(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	if _, resp, err := dialWS(t, og.URL, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata") {
		t.Fatalf("upgrade without a token: %v %+v; want 401 with the challenge", err, resp)
	}
	reader := clientToken(t, og, "ws-reader", "sandbox:files:read")
	bearer := http.Header{"Authorization": {"Bearer " + reader}}
	if _, resp, err := dialWS(t, og.URL, http.Header{"Authorization": {"Bearer " + reader}, "Origin": {"https://elsewhere.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("upgrade from a foreign origin: %v %+v; want 403", err, resp)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", og.URL+"/ws", nil)
	req.Header = bearer.Clone()
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("a GET without an upgrade: %v %+v; want 426", err, resp)
	} else {
		resp.Body.Close()
	}

	c, _, err := dialWS(t, og.URL, bearer)
	if err != nil {
		t.Fatalf("dial with a token: %v", err)
	}
	c.initialize("2025-06-18")
	m := c.await(c.request("tools/call", map[string]any{"name": "run_shell", "arguments": map[string]any{"command": "true"}}))
	if m.Error == nil || !strings.Contains(m.Error.Message, "sandbox:exec") {
		t.Fatalf("run_shell without sandbox:exec: %+v; want a refusal naming the scope", m)
	}
	if l := c.call("tools/list", map[string]any{}); len(l) == 0 {
		t.Fatal("tools/list after the refusal: empty")
	}
}

// TestMCPWebSocketSessionEnds: when the session ends under the
// connection (here the gateway stops), the connection is closed with
// going-away and a reason that says to reconnect, not left open to fail
// every later message.
func TestMCPWebSocketSessionEnds(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c, _, err := dialWS(t, tg.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.initialize("2025-06-18")
	c.call("tools/list", map[string]any{}) // the standalone stream is open by now
	go tg.Close()
	for {
		_, _, err := c.conn.Read(t.Context())
		if err == nil {
			continue // a notification of the session's end
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || !strings.Contains(ce.Reason, "reconnect") {
			t.Fatalf("the connection when the gateway stops: %v; want going away, saying to reconnect", err)
		}
		return
	}
}
