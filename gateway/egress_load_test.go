package gateway_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
)

// TestEgressBulkDownloadKeepsOutputFlowing downloads 1 GiB through the
// proxy while another call in the same sandbox streams its output: the
// output keeps arriving while the download runs (the egress session has
// its own connection and per-stream windows), and the gateway's memory
// stays bounded (windows, not buffers, hold what is in flight).
func TestEgressBulkDownloadKeepsOutputFlowing(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1 GiB")
	}
	world := newEgressWorld(t)
	tg := startGateway(t, func(c *gateway.Config) {
		world.configure(t, c, egressCeiling...)
		// Room for a slow, busy machine: the ticks end with the download.
		c.Limits.CallTimeout = 2 * time.Minute
	})
	c := legacyClient(t, tg.URL)
	mustOK(t, "warm up", call(t, c, "run_shell", map[string]any{"command": "true"}))

	var mu sync.Mutex
	var ticksBeforeServed int
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		msg, _ := n.Params.AdditionalFields["message"].(string)
		if n.Method != "notifications/progress" || !strings.Contains(msg, "tick") {
			return
		}
		select {
		case <-world.bigServed:
		default:
			mu.Lock()
			ticksBeforeServed++
			mu.Unlock()
		}
	})
	stopSampling := sampleHeap(t)

	mustOK(t, "start the download", call(t, c, "run_shell", map[string]any{"background": true,
		"command": "curl -sS -o /dev/null -w '%{size_download}' http://allowed.test/big > /tmp/dl.size 2>/tmp/dl.err; touch /tmp/dl.done"}))
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_shell"
	// Ticks for as long as the download runs (bounded), then its result.
	req.Params.Arguments = map[string]any{"command": "i=0; while [ ! -e /tmp/dl.done ] && [ $i -lt 900 ]; do i=$((i+1)); echo tick $i; sleep 0.1; done; echo; cat /tmp/dl.size /tmp/dl.err", "timeout": 120}
	req.Params.Meta = &mcp.Meta{ProgressToken: "bulk"}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	out := structuredAs[execResult](t, mustOK(t, "run_shell", res))
	growth := stopSampling()
	if !strings.HasSuffix(strings.TrimSpace(out.Stdout), "1073741824") {
		t.Fatalf("download did not complete: stdout tail %q, stderr %q", tail(out.Stdout, 200), out.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if ticksBeforeServed < 2 {
		t.Errorf("%d output notifications arrived before the server finished sending 1 GiB; want the output to keep flowing during the download", ticksBeforeServed)
	}
	if growth > 256<<20 {
		t.Errorf("gateway heap grew by %d MiB during a 1 GiB download; want it bounded by the flow-control windows", growth>>20)
	}
	t.Logf("%d output notifications during the download; heap growth %d MiB", ticksBeforeServed, growth>>20)
}

// sampleHeap samples the in-use heap until the returned func is called,
// which returns the largest growth over the first sample.
func sampleHeap(t testing.TB) func() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		if peak < base {
			return 0
		}
		return peak - base
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
