package gateway_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestStreamingArrivesBeforeEnd checks that output reaches the client as
// progress notifications while the command still runs.
func TestStreamingArrivesBeforeEnd(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "warm up", call(t, c, "run_shell", map[string]any{"command": "true"}))

	if err := c.SetLevel(t.Context(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var firstAt time.Time
	var messages, logged []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		if n.Method == "notifications/message" && n.Params.AdditionalFields["logger"] == "stdout" {
			data, _ := n.Params.AdditionalFields["data"].(string)
			logged = append(logged, data)
		}
		// The completion (progress == total) follows the output; it is not
		// part of it.
		if n.Method != "notifications/progress" || n.Params.AdditionalFields["total"] != nil {
			return
		}
		if msg, _ := n.Params.AdditionalFields["message"].(string); msg != "" {
			if firstAt.IsZero() && strings.Contains(msg, "first") {
				firstAt = time.Now()
			}
			messages = append(messages, msg)
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_shell"
	req.Params.Arguments = map[string]any{"command": "echo first; sleep 2; echo second"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "tok-1"}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	endAt := time.Now()
	mustOK(t, "run_shell", res)
	mu.Lock()
	defer mu.Unlock()
	if firstAt.IsZero() {
		t.Fatalf("no progress notification carried the first chunk; got %q", messages)
	}
	if gap := endAt.Sub(firstAt); gap < time.Second {
		t.Fatalf("first chunk arrived only %v before the result; it was not streamed", gap)
	}
	if got := strings.Join(messages, ""); got != "first\nsecond\n" {
		t.Fatalf("streamed %q", got)
	}
	if got := strings.Join(logged, ""); got != "first\nsecond\n" {
		t.Fatalf("log notifications carried %q", got)
	}
}

// TestHostileWorkloads runs the attacks the core issue names against one
// sandbox and checks each is contained and reported, and that the
// sandbox stays usable afterwards.
func TestHostileWorkloads(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil) // the default 512 MiB, 128 pids
	c := legacyClient(t, tg.URL)

	t.Run("memory bomb is reported as OOM", func(t *testing.T) {
		r, res := shell(t, c, `python3 -c "b = b'x' * (600 << 20); print(len(b))"`, nil)
		if !res.IsError || !r.OOMKilled || !strings.Contains(r.Message, "out of memory") || !strings.Contains(r.Message, "512 MiB") {
			t.Fatalf("memory bomb: isError=%v %+v", res.IsError, r)
		}
	})

	t.Run("fork bomb is contained", func(t *testing.T) {
		start := time.Now()
		r, _ := shell(t, c, `bomb() { bomb | bomb & }; bomb; sleep 3`, map[string]any{"timeout": 6})
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("fork bomb call took %v (timeout 6 s): %+v", took, r)
		}
		r, res := shell(t, c, "echo alive; ps -e --no-headers | wc -l", nil)
		mustOK(t, "run_shell after fork bomb", res)
		var procs int
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.Stdout, "alive\n"), "%d", &procs); err != nil || !strings.HasPrefix(r.Stdout, "alive\n") {
			t.Fatalf("sandbox unusable after fork bomb: %+v", r)
		}
		if procs > 10 {
			t.Fatalf("%d processes left in the sandbox after the fork bomb call ended:\n%s", procs, r.Stdout)
		}
	})

	t.Run("timeout kills the whole tree", func(t *testing.T) {
		cmd := `sleep 1001 & setsid sleep 1002 & nohup sleep 1003 >/dev/null 2>&1 & (sleep 1004 &) ; sh -c 'setsid sh -c "sleep 1005 &" &'; sleep 1000`
		r, res := shell(t, c, cmd, map[string]any{"timeout": 2})
		if !res.IsError || !r.TimedOut {
			t.Fatalf("want timed_out: %+v", r)
		}
		r, _ = shell(t, c, "ps -eo stat,args --no-headers", nil)
		for _, line := range strings.Split(r.Stdout, "\n") {
			if strings.Contains(line, "sleep 100") {
				t.Errorf("survivor after timeout: %q", line)
			}
			if strings.HasPrefix(line, "Z") {
				t.Errorf("zombie after timeout: %q", line)
			}
		}
	})

	t.Run("yes flood is capped and gateway memory stays bounded", func(t *testing.T) {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, res := shell(t, c, "yes", map[string]any{"timeout": 3})
		if !res.IsError || !r.TimedOut || !r.StdoutTruncated {
			t.Fatalf("yes: isError=%v timed_out=%v truncated=%v", res.IsError, r.TimedOut, r.StdoutTruncated)
		}
		if n := len(r.Stdout); n > 1<<20 || n < 1<<19 {
			t.Fatalf("stdout holds %d bytes; want close to the 1 MiB cap", n)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
			t.Fatalf("gateway heap grew by %d MiB during a yes flood", grew>>20)
		}
	})

	t.Run("cancellation kills the call", func(t *testing.T) {
		ctx, cancel := contextWithTimeout(t, 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := callErr(ctx, c, "run_shell", map[string]any{"command": "sleep 1006"})
		if err == nil {
			t.Fatal("call survived its client's cancellation")
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("cancel took %v", time.Since(start))
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, _ := shell(t, c, "ps -eo args --no-headers", nil)
			if !strings.Contains(r.Stdout, "sleep 1006") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleep 1006 still running after the client cancelled:\n%s", r.Stdout)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
