package mcpedge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// ping sends one ping on session and returns the response body.
func ping(ctx context.Context, url, session string, id int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp",
		strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TestListChangedReachesSessionsWithoutStream: legacy sessions that
// open no standalone stream and keep pinging get every
// tools/list_changed exactly once, on a busy scheduler, although mcp-go
// drops a queued notification whose request ends as its forwarder takes
// it (see redelivery). Each broadcast waits until every session heard
// of it; the pings are bounded. Two spinning goroutines per CPU keep the
// scheduler busy, as a loaded CI machine does.
func TestListChangedReachesSessionsWithoutStream(t *testing.T) {
	e, ts, _ := pinEdge(t)
	const sessions, rounds = 16, 24
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = initialize(t, ts.URL)
	}
	stopSpinning := busyScheduler()
	heard := make([]atomic.Int64, sessions)
	var pings atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			for n := 0; n < 100000 && ctx.Err() == nil; n++ {
				body, err := ping(ctx, ts.URL, id, n+10)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("session %d: %v", i, err)
					}
					return
				}
				pings.Add(1)
				heard[i].Add(int64(strings.Count(body, mcp.MethodNotificationToolsListChanged)))
			}
		})
	}
	finish := func() {
		cancel()
		wg.Wait()
		stopSpinning()
	}
	defer func() {
		if ctx.Err() == nil {
			finish()
		}
	}()
	handler := func(context.Context, mcpapi.CallToolRequest) (*mcpapi.CallToolResult, error) {
		return mcpapi.NewToolResultText("ok"), nil
	}
	for round := 1; round <= rounds; round++ {
		e.AddTools(mcpapi.ServerTool{Tool: mcpapi.NewTool(fmt.Sprintf("added%d", round)), Handler: handler})
		deadline := time.Now().Add(30 * time.Second)
		for i := range heard {
			for heard[i].Load() < int64(round) {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: session %d heard %d tools/list_changed after %d pings in all", round, i, heard[i].Load(), pings.Load())
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	finish()
	// A few more pings each pick up any copy still queued: a duplicate
	// would show here.
	for i, id := range ids {
		for n := range 3 {
			body, err := ping(t.Context(), ts.URL, id, 200000+n)
			if err != nil {
				t.Fatal(err)
			}
			heard[i].Add(int64(strings.Count(body, mcp.MethodNotificationToolsListChanged)))
		}
		if got := heard[i].Load(); got != rounds {
			t.Errorf("session %d heard tools/list_changed %d times, want %d", i, got, rounds)
		}
	}
	t.Logf("%d pings; %v copies queued again", pings.Load(), testutil.ToFloat64(e.redeliver.redelivered))
}
