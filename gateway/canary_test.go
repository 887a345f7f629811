package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// canaryStall is how long one canary call may take before the gateway
// counts as stalled. It is deliberately generous: the canary proves the
// gateway keeps serving other sessions during an attack, not how fast.
const canaryStall = 10 * time.Second

// canaryStats is what a canary saw while it ran.
type canaryStats struct {
	Calls  int
	Errors []string
	Max    time.Duration
	P99    time.Duration
}

// startCanary connects a second legacy client with its own sandbox and
// runs `echo ok` in it every 200 ms until stop is called. stop logs the
// canary's latencies and fails the test if any call failed, answered
// wrongly or took longer than canaryStall. Latencies are logged, never
// asserted more tightly: the host is shared with the attack.
func startCanary(t *testing.T, tg *testGateway) (stop func() canaryStats) {
	t.Helper()
	c := legacyClient(t, tg.URL)
	mustOK(t, "canary warm-up", call(t, c, "run_shell", map[string]any{"command": "echo ok"}))

	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var (
		wg        sync.WaitGroup
		errs      []string
		latencies []time.Duration
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cctx, ccancel := context.WithTimeout(ctx, canaryStall)
			began := time.Now()
			res, err := callErr(cctx, c, "run_shell", map[string]any{"command": "echo ok"})
			took := time.Since(began)
			ccancel()
			if ctx.Err() != nil {
				return // stopped mid-call; not the gateway's fault
			}
			latencies = append(latencies, took)
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("after %v: %v", took.Round(time.Millisecond), err))
			case res.IsError || execOf(res).Stdout != "ok\n":
				errs = append(errs, fmt.Sprintf("after %v: unexpected result %q", took.Round(time.Millisecond), text(res)))
			}
		}
	}()

	var once sync.Once
	var stats canaryStats
	stop = func() canaryStats {
		t.Helper()
		once.Do(func() {
			cancel()
			wg.Wait()
			stats = summarize(latencies, errs)
			t.Logf("canary: %d calls, max %v, p99 %v, %d errors", stats.Calls, stats.Max, stats.P99, len(stats.Errors))
			for _, e := range stats.Errors {
				t.Errorf("canary call failed during the attack: %s", e)
			}
			if stats.Max > canaryStall {
				t.Errorf("canary stalled: a call took %v", stats.Max)
			}
			if stats.Calls == 0 {
				t.Errorf("canary made no call during the attack")
			}
		})
		return stats
	}
	t.Cleanup(func() { stop() })
	return stop
}

// execOf decodes run_shell's structuredContent without a testing.T, for
// goroutines; a result that does not decode is the zero value.
func execOf(res *mcp.CallToolResult) execResult {
	var r execResult
	if b, err := json.Marshal(res.StructuredContent); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	return r
}

func summarize(latencies []time.Duration, errs []string) canaryStats {
	s := canaryStats{Calls: len(latencies), Errors: errs}
	if len(latencies) == 0 {
		return s
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	s.Max = sorted[len(sorted)-1].Round(time.Millisecond)
	s.P99 = sorted[(len(sorted)*99)/100].Round(time.Millisecond)
	return s
}
