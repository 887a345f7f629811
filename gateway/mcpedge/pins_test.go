package mcpedge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/metrics"
)

// The tests in this file pin behaviour of mcp-go that the edge's
// workarounds rely on, against mcp-go itself and nothing of the gateway
// but this package: an upgrade that changes it fails here.

// pinEdge is an edge with authentication off and two tools: "big",
// whose large text is held for splicing as the gateway's call handler
// holds it, and "big_streamed", which sends a progress notification
// first, so that mcp-go answers with an SSE stream.
func pinEdge(t *testing.T) (*Edge, *httptest.Server, *endedSessions) {
	t.Helper()
	e, ended := testEdge(t)
	big := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The edge took the arguments out of the body mcp-go decoded.
		msg, _ := MessageFrom(ctx)
		if len(req.GetArguments()) != 0 {
			return nil, fmt.Errorf("mcp-go decoded arguments %v; the edge should have taken them out", req.GetArguments())
		}
		if msg.Args["notify"] != nil {
			// Queued for mcp-go, whose forwarder takes one notification
			// at a time: once the second is taken the first is written,
			// and the response is an SSE stream.
			srv := server.ServerFromContext(ctx)
			for i := range 2 {
				if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": "p", "progress": i + 1}); err != nil {
					return nil, err
				}
				if err := drained(ctx); err != nil {
					return nil, err
				}
			}
		}
		res := mcp.NewToolResultText(bigText)
		HoldLargeTexts(ctx, res)
		return res, nil
	}
	e.MCP().AddTool(mcp.NewTool("big", mcp.WithString("notify")), big)
	ts := httptest.NewServer(e.Middleware(e.Transport()))
	t.Cleanup(ts.Close)
	return e, ts, ended
}

// testEdge is an edge with authentication off and no tools, which
// records the sessions that end.
func testEdge(t *testing.T) (*Edge, *endedSessions) {
	t.Helper()
	sink, err := audit.OpenFile(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	ended := &endedSessions{}
	e := New(Config{Local: identity.Identity{Issuer: "local", Subject: "local", Tenant: "local"}, BodyReadTimeout: time.Minute,
		IdleTTL: 15 * time.Minute, Audit: sink, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New(),
		NeededScopes: func(Message) []string { return nil }, OnSessionEnd: ended.add,
		Name: "pin", Version: "0"})
	return e, ended
}

// drained waits until the session's notification queue is empty.
func drained(ctx context.Context) error {
	s := server.ClientSessionFromContext(ctx)
	for s != nil && len(s.NotificationChannel()) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

var bigText = strings.Repeat("row \"quoted\" <tag> & ünïcödé\t\\\n", 6000) // about 200 KB

type endedSessions struct {
	mu  sync.Mutex
	ids []string
}

func (s *endedSessions) add(id, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id+" "+reason)
}

func (s *endedSessions) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

// post sends one JSON-RPC message and returns the response, its content
// type and its last JSON-RPC message (the body, or an SSE stream's last
// data line).
func post(t *testing.T, url, session, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			last = data
		} else if strings.HasPrefix(line, "{") {
			last = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return resp, last
}

func initialize(t *testing.T, url string) string {
	t.Helper()
	resp, _ := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pin","version":"0"}}}`)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatal("initialize returned no Mcp-Session-Id: mcp-go no longer asks the SessionIdManager (sessions.go) for one")
	}
	post(t, url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return session
}

// TestPinOneWritePerMessage: mcp-go writes each JSON-RPC message, in a
// JSON body or as an SSE event, with one Write, and answers with SSE
// once a call sent a notification; so the placeholder of a held text is
// never split across writes, and the splicer (bulktext.go) puts the text
// back in both kinds of response.
func TestPinOneWritePerMessage(t *testing.T) {
	_, ts, _ := pinEdge(t)
	session := initialize(t, ts.URL)
	for _, tc := range []struct {
		name, args, ctype string
	}{
		{"json", `{}`, "application/json"},
		{"sse", `{"notify":"yes"},"_meta":{"progressToken":"p"}`, "text/event-stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, last := post(t, ts.URL, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":`+tc.args+`}}`)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
				t.Fatalf("Content-Type %q, want %s", ct, tc.ctype)
			}
			var rpc struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(last), &rpc); err != nil {
				t.Fatalf("the response's last message is not JSON (%v): %.200s", err, last)
			}
			if len(rpc.Result.Content) != 1 || rpc.Result.Content[0].Text != bigText {
				t.Fatalf("the held text did not come back whole: %d contents, first %.80q", len(rpc.Result.Content), first(rpc.Result.Content))
			}
		})
	}
}

func first(c []struct{ Text string }) string {
	if len(c) == 0 {
		return ""
	}
	return c[0].Text
}

// TestPinSessionLifecycle: mcp-go asks the edge's SessionIdManager to
// check every later request's session id, and to terminate it on DELETE;
// the session's end (and the audit record and sandbox removal behind it)
// hangs on that call.
func TestPinSessionLifecycle(t *testing.T) {
	_, ts, ended := pinEdge(t)
	session := initialize(t, ts.URL)
	if resp, _ := post(t, ts.URL, "made-up-session", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown session id: status %d, want 404 (mcp-go no longer validates it with the SessionIdManager)", resp.StatusCode)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, ts.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := ended.all(); len(got) != 1 || got[0] != session+" client DELETE" {
		t.Fatalf("after DELETE the sessions ended were %q, want [%q]: mcp-go no longer calls Terminate", got, session+" client DELETE")
	}
	if resp, _ := post(t, ts.URL, session, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the deleted session: status %d, want 404", resp.StatusCode)
	}
}

// TestPinBroadcastShape: a tools/list_changed that mcp-go queues for a
// session comes out on the session's next streamed POST response as one
// SSE event in exactly the shape isBroadcastEvent recognises, which is
// how the standalone hub leaves out a copy it already delivered on the
// session's GET stream (standalone_hub.go, swallow).
func TestPinBroadcastShape(t *testing.T) {
	e, ts, _ := pinEdge(t)
	session := initialize(t, ts.URL)
	e.MCP().AddTool(mcp.NewTool("added"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"big","arguments":{"notify":"yes"},"_meta":{"progressToken":"p"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for ev := range strings.SplitSeq(string(body), "\n\n") {
		if strings.Contains(ev, mcp.MethodNotificationToolsListChanged) {
			events = append(events, ev+"\n\n")
		}
	}
	if len(events) != 1 || !isBroadcastEvent([]byte(events[0])) {
		t.Fatalf("tools/list_changed on the POST response: %q; want one event isBroadcastEvent recognises", events)
	}
}
