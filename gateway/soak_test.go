package gateway_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
)

// TestSoak runs many sessions of mixed tool calls against one gateway for
// SANDGATE_SOAK_DURATION (make soak) and fails on any unexpected error,
// on memory or goroutines that keep growing, and on containers left
// behind. SANDGATE_SOAK_SESSIONS sets the session count (default 100).
// The gateway runs in this process, so RSS and goroutines include the
// clients', a constant share.
func TestSoak(t *testing.T) {
	duration, err := time.ParseDuration(os.Getenv("SANDGATE_SOAK_DURATION"))
	if err != nil {
		t.Skip("soak test: set SANDGATE_SOAK_DURATION (make soak)")
	}
	sessions := 100
	if n, err := strconv.Atoi(os.Getenv("SANDGATE_SOAK_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	tg := startGateway(t, func(cfg *gateway.Config) {
		cfg.MaxSandboxesPerTenant = sessions + 10
		cfg.ToolCallsPerMinute = 1 << 30
		cfg.Limits.CallTimeout = time.Minute
	})
	st := &soakStats{lat: map[string][]time.Duration{}}

	// Sessions start one after another, so container creation is not one
	// burst.
	clients := make([]*client.Client, sessions)
	began := time.Now()
	for i := range clients {
		clients[i] = legacyClient(t, tg.URL)
		mustOK(t, "run_shell", call(t, clients[i], "run_shell", map[string]any{"command": "true"}))
	}
	t.Logf("%d sessions with sandboxes in %s", sessions, time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(t.Context(), duration)
	defer cancel()
	samples := make(chan []soakSample, 1)
	go func() { samples <- sample(ctx, t) }()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakSession(ctx, c, i, st)
		}()
	}
	wg.Wait()
	series := <-samples
	st.report(t)
	checkFlat(t, series)

	for _, c := range clients {
		c.Close()
	}
	waitFor(t, time.Minute, "sandboxes removed after the sessions ended", func() bool { return len(tg.containers(t)) == 0 })
	t.Logf("containers left after the sessions ended: %d", len(tg.containers(t)))
}

// soakStats collects per-tool latencies and unexpected errors.
type soakStats struct {
	mu     sync.Mutex
	lat    map[string][]time.Duration
	errors []string
	calls  int
}

func (s *soakStats) add(tool string, d time.Duration, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.lat[tool] = append(s.lat[tool], d)
	if problem != "" {
		s.errors = append(s.errors, tool+": "+problem)
	}
}

func (s *soakStats) report(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tools := make([]string, 0, len(s.lat))
	for tool := range s.lat {
		tools = append(tools, tool)
	}
	slices.Sort(tools)
	t.Logf("%d calls, %d unexpected errors", s.calls, len(s.errors))
	for _, tool := range tools {
		l := s.lat[tool]
		slices.Sort(l)
		t.Logf("  %-16s n=%-6d p50=%-8s p99=%s", tool, len(l), pct(l, 50), pct(l, 99))
	}
	for i, e := range s.errors {
		if i == 20 {
			t.Errorf("... and %d more", len(s.errors)-20)
			break
		}
		t.Errorf("unexpected: %s", e)
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}

// soakSession calls each tool in turn, with think time between calls,
// until ctx ends.
func soakSession(ctx context.Context, c *client.Client, id int, st *soakStats) {
	think := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Duration(100+rand.IntN(400)) * time.Millisecond):
			return true
		}
	}
	// do makes one call; check returns what is wrong with a result, or "".
	do := func(tool string, args map[string]any, check func(string) string) (*mcp.CallToolResult, bool) {
		if !think() {
			return nil, false
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		began := time.Now()
		// Calls are not cut by the soak's end: a call in flight finishes.
		res, err := c.CallTool(context.WithoutCancel(ctx), req)
		d := time.Since(began)
		switch {
		case err != nil:
			st.add(tool, d, err.Error())
			return nil, true
		case res.IsError:
			st.add(tool, d, soakCut(text(res), 300))
			return nil, true
		}
		problem := ""
		if check != nil {
			problem = check(text(res))
		}
		st.add(tool, d, problem)
		return res, true
	}
	has := func(want string) func(string) string {
		return func(got string) string {
			if !strings.Contains(got, want) {
				return fmt.Sprintf("result lacks %q: %q", want, soakCut(got, 200))
			}
			return ""
		}
	}
	for n := 0; ; n++ {
		m := fmt.Sprintf("soak-%d-%d", id, n)
		steps := []struct {
			tool  string
			args  map[string]any
			check func(string) string
		}{
			{"run_shell", map[string]any{"command": "echo " + m}, has(m)},
			{"write_file", map[string]any{"path": "soak.txt", "content": m + "\n"}, nil},
			{"read_file", map[string]any{"path": "soak.txt"}, has(m)},
			{"search_files", map[string]any{"pattern": m, "path": "/workspace"}, has(m)},
			{"run_code", map[string]any{"language": "python", "code": "print('" + m + "')"}, has(m)},
			{"sandbox_info", nil, nil},
		}
		for _, s := range steps {
			if _, ok := do(s.tool, s.args, s.check); !ok {
				return
			}
		}
		res, ok := do("run_shell", map[string]any{"command": "echo " + m + "; sleep 1", "background": true}, nil)
		if !ok {
			return
		}
		if res == nil {
			continue
		}
		pid, _ := res.StructuredContent.(map[string]any)["process_id"].(string)
		if _, ok := do("process_output", map[string]any{"process_id": pid}, nil); !ok {
			return
		}
	}
}

type soakSample struct {
	at         time.Duration
	rss        int64 // bytes
	goroutines int
}

// sample records RSS and goroutines every SANDGATE_SOAK_SAMPLE (default
// 10 s) until ctx ends.
func sample(ctx context.Context, t *testing.T) []soakSample {
	every := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("SANDGATE_SOAK_SAMPLE")); err == nil && d > 0 {
		every = d
	}
	began := time.Now()
	var out []soakSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s := soakSample{at: time.Since(began).Round(time.Second), rss: rss(), goroutines: runtime.NumGoroutine()}
		out = append(out, s)
		t.Logf("t=%-5s rss=%d MiB goroutines=%d", s.at, s.rss>>20, s.goroutines)
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

// rss is this process's resident set size.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// checkFlat fails if the last third of the samples averages more than
// 1.5 times the first third plus a small constant: growth, not noise.
func checkFlat(t *testing.T, series []soakSample) {
	if len(series) < 3 {
		t.Logf("only %d samples; too few to judge growth", len(series))
		return
	}
	third := len(series) / 3
	avg := func(part []soakSample, f func(soakSample) float64) float64 {
		var sum float64
		for _, s := range part {
			sum += f(s)
		}
		return sum / float64(len(part))
	}
	first, last := series[:third], series[len(series)-third:]
	for _, m := range []struct {
		name  string
		slack float64
		f     func(soakSample) float64
	}{
		{"RSS MiB", 64, func(s soakSample) float64 { return float64(s.rss >> 20) }},
		{"goroutines", 200, func(s soakSample) float64 { return float64(s.goroutines) }},
	} {
		a, b := avg(first, m.f), avg(last, m.f)
		t.Logf("%s: first third %.0f, last third %.0f", m.name, a, b)
		if b > 1.5*a+m.slack {
			t.Errorf("%s grew from %.0f to %.0f over the soak", m.name, a, b)
		}
	}
}

func soakCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
