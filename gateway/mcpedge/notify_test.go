package mcpedge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// chunkServer serves, through the edge as the gateway does, one tool that
// sends n chunks of output through its notifier, the way run_shell
// forwards a runner's output, then its completion (Finish), and returns
// at once: the moment a notification queued for mcp-go could lose the
// race with the result (see notify.go).
func chunkServer(t *testing.T, n int) string {
	t.Helper()
	e, _ := testEdge(t)
	e.MCP().AddTool(mcp.NewTool("chunks"), serveTool(func(_ context.Context, req mcpapi.CallToolRequest) (*mcpapi.CallToolResult, error) {
		var out strings.Builder
		for i := range n {
			chunk := fmt.Sprintf("%d,", i)
			out.WriteString(chunk)
			req.Notifier.Progress(out.Len(), 0, chunk)
			req.Notifier.Log("stdout", chunk)
		}
		req.Notifier.Finish("done")
		return mcpapi.NewToolResultText(out.String()), nil
	}))
	ts := httptest.NewServer(e.Handler())
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// lostChunks makes calls concurrent calls of the chunks tool over as
// many sessions and counts the calls whose result arrived before all of
// their progress or log notifications. Two spinning goroutines per CPU
// keep the scheduler busy, as a loaded CI machine does.
func lostChunks(t *testing.T, url string, n, sessions, calls int) int64 {
	t.Helper()
	defer busyScheduler()()
	want := ""
	for i := range n {
		want += fmt.Sprintf("%d,", i)
	}
	var lost atomic.Int64
	var wg sync.WaitGroup
	for range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				t.Error(err)
				return
			}
			c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
			defer c.Close()
			var mu sync.Mutex
			var progress, logs strings.Builder
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case n.Method == "notifications/progress" && n.Params.AdditionalFields["total"] == nil:
					progress.WriteString(n.Params.AdditionalFields["message"].(string))
				case n.Method == "notifications/message" && n.Params.AdditionalFields["logger"] == "stdout":
					logs.WriteString(n.Params.AdditionalFields["data"].(string))
				}
			})
			ctx := t.Context()
			if err := c.Start(ctx); err != nil {
				t.Error(err)
				return
			}
			init := mcp.InitializeRequest{}
			init.Params.ClientInfo = mcp.Implementation{Name: "order", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Error(err)
				return
			}
			if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
				t.Error(err)
				return
			}
			for i := range calls {
				mu.Lock()
				progress.Reset()
				logs.Reset()
				mu.Unlock()
				req := mcp.CallToolRequest{}
				req.Params.Name = "chunks"
				req.Params.Meta = &mcp.Meta{ProgressToken: fmt.Sprintf("tok-%d", i)}
				if _, err := c.CallTool(ctx, req); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if progress.String() != want || logs.String() != want {
					lost.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lost.Load()
}

// TestNotificationsPrecedeTheResult: every output notification of a call
// reaches the client before the call's result, on a busy scheduler, over
// many sessions of many calls each. mcp-go's client hands a POST's SSE
// events to the notification handler in the order they arrive, before
// it returns the result (client/transport/streamable_http.go,
// handleSSEResponse), so this sees the server's order. When they were
// queued for mcp-go, a run under load now and then had a call that lost
// a chunk to the forwarder of the session's previous call (notify.go).
func TestNotificationsPrecedeTheResult(t *testing.T) {
	t.Parallel()
	const chunks, sessions, calls = 20, 6, 40
	if lost := lostChunks(t, chunkServer(t, chunks), chunks, sessions, calls); lost != 0 {
		t.Fatalf("%d of %d calls returned before all their notifications", lost, sessions*calls)
	}
}

// busyScheduler keeps every CPU busy with two spinning goroutines, as a
// loaded CI machine does, until the returned function is called.
func busyScheduler() (stop func()) {
	done := make(chan struct{})
	for range 2 * runtime.GOMAXPROCS(0) {
		go func() {
			for {
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	return func() { close(done) }
}

// TestCallStreamSharesTheResponse: on the wire, a call's notifications
// come as SSE events in the order the call sent them and before its
// result, which is the last event, while mcp-go's forwarder writes a
// notification queued for the session (here a resource update) into the
// same response, sometimes before the call's first; each event is one
// whole JSON-RPC message. Under -race this also checks that the two
// writers share the response and its headers safely.
func TestCallStreamSharesTheResponse(t *testing.T) {
	t.Parallel()
	const chunks = 50
	e, _ := testEdge(t)
	e.MCP().AddTool(mcp.NewTool("chunks"), serveTool(func(ctx context.Context, req mcpapi.CallToolRequest) (*mcpapi.CallToolResult, error) {
		for i := range chunks {
			if i == 0 {
				e.NotifySession(req.Session, "notifications/resources/updated", map[string]any{"uri": "sandbox://updated"})
			}
			chunk := fmt.Sprintf("%d,", i)
			req.Notifier.Progress(i+1, 0, chunk)
			req.Notifier.Log("stdout", chunk)
		}
		req.Notifier.Finish("done")
		return mcpapi.NewToolResultText("ok"), nil
	}))
	ts := httptest.NewServer(e.Handler())
	t.Cleanup(ts.Close)
	session := initialize(t, ts.URL)
	post(t, ts.URL, session, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	want := ""
	for i := range chunks {
		want += fmt.Sprintf("%d,", i)
	}
	for call := range 20 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(fmt.Sprintf(
			`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chunks","_meta":{"progressToken":"tok"}}}`, 10+call)))
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
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("call %d: Content-Type %q, want text/event-stream", call, ct)
		}
		events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
		var progress, logs strings.Builder
		for i, ev := range events {
			data, ok := strings.CutPrefix(ev, "event: message\ndata: ")
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Params struct {
					Total   any    `json:"total"`
					Message string `json:"message"`
					Logger  string `json:"logger"`
					Data    string `json:"data"`
				} `json:"params"`
			}
			if !ok || strings.Contains(data, "\n") || json.Unmarshal([]byte(data), &msg) != nil {
				t.Fatalf("call %d: event %d is not one JSON-RPC message: %q", call, i, ev)
			}
			if last := i == len(events)-1; last != (msg.ID != nil) {
				t.Fatalf("call %d: event %d of %d has id %s: the result must be the last event and the only one with an id", call, i, len(events), msg.ID)
			}
			switch {
			case msg.Method == "notifications/progress" && msg.Params.Total == nil:
				progress.WriteString(msg.Params.Message)
			case msg.Method == "notifications/message" && msg.Params.Logger == "stdout":
				logs.WriteString(msg.Params.Data)
			}
		}
		if progress.String() != want || logs.String() != want {
			t.Fatalf("call %d: before the result came progress %q and logs %q, want %q for both", call, progress.String(), logs.String(), want)
		}
	}
}
