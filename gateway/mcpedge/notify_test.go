package mcpedge

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// chunkServer serves one tool that sends n chunks of output through its
// notifier, the way run_shell forwards a runner's output, and returns at
// once after the last: the moment mcp-go's notification forwarder can
// lose the race with the result.
func chunkServer(t *testing.T, n int, finish bool) string {
	t.Helper()
	s := server.NewMCPServer("chunks", "1", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcp.NewTool("chunks"), serveTool(func(_ context.Context, req mcpapi.CallToolRequest) (*mcpapi.CallToolResult, error) {
		var out strings.Builder
		for i := range n {
			chunk := fmt.Sprintf("%d,", i)
			out.WriteString(chunk)
			req.Notifier.Progress(out.Len(), 0, chunk)
			req.Notifier.Log("stdout", chunk)
		}
		if finish {
			req.Notifier.Finish("done")
		}
		return mcpapi.NewToolResultText(out.String()), nil
	}))
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
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
// reaches the client before the call's result, on a busy scheduler.
// Without Finish, mcp-go v1.2.1 loses or reorders some (the test logs how
// many); with it, none.
func TestNotificationsPrecedeTheResult(t *testing.T) {
	t.Parallel()
	const chunks, sessions, calls = 20, 6, 40
	if testing.Verbose() {
		bare := lostChunks(t, chunkServer(t, chunks, false), chunks, sessions, calls)
		t.Logf("without Finish: %d of %d calls returned before all their notifications", bare, sessions*calls)
	}
	if lost := lostChunks(t, chunkServer(t, chunks, true), chunks, sessions, calls); lost != 0 {
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
