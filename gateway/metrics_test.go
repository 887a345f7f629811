package gateway_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestMetricsMove scrapes /metrics after a few calls, as an operator's
// Prometheus would, and checks that each instrument moved: calls by tool
// and outcome, their latency, the sandbox start, the live count, HTTP
// requests by status and the audit log's writes.
func TestMetricsMove(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	before := scrape(t, tg)
	if n := before[`sandgate_tool_calls_total{outcome="ok",tool="read_file"}`]; n != 0 {
		t.Fatalf("read_file calls before any call: %v", n)
	}
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "m.txt", "content": "metrics"}))
	mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "m.txt"}))
	mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "m.txt"}))
	if res := call(t, c, "read_file", map[string]any{"path": 42}); !res.IsError {
		t.Fatal("read_file with a number for a path succeeded")
	}
	if res := call(t, c, "read_file", map[string]any{"path": "missing.txt"}); !res.IsError {
		t.Fatal("read_file of a missing file succeeded")
	}

	after := scrape(t, tg)
	want := map[string]float64{
		`sandgate_tool_calls_total{outcome="ok",tool="write_file"}`:    1,
		`sandgate_tool_calls_total{outcome="ok",tool="read_file"}`:     2,
		`sandgate_tool_calls_total{outcome="denied",tool="read_file"}`: 1,
		`sandgate_tool_calls_total{outcome="error",tool="read_file"}`:  1,
		`sandgate_tool_call_duration_seconds_count{tool="read_file"}`:  4,
		`sandgate_sandbox_starts_total{outcome="ok",source="cold"}`:    1,
		`sandgate_sandbox_start_duration_seconds_count{source="cold"}`: 1,
		`sandgate_sandboxes_live{tenant="local"}`:                      1,
	}
	for name, n := range want {
		if got := after[name] - before[name]; got != n {
			t.Errorf("%s moved by %v, want %v", name, got, n)
		}
	}
	// Every call, the initialize and the notification answered 200 or 202.
	if got := after[`sandgate_http_requests_total{code="200",handler="mcp"}`]; got < 6 {
		t.Errorf("mcp requests answered 200: %v, want at least 6 (initialize and 5 calls)", got)
	}
	// Each call writes two records (one for a denied call); group commits
	// may carry several, so only the totals are certain.
	if got := after["sandgate_audit_fsync_records_sum"] - before["sandgate_audit_fsync_records_sum"]; got < 9 {
		t.Errorf("records made durable: %v, want at least 9", got)
	}
	if got := after["sandgate_audit_append_duration_seconds_count"] - before["sandgate_audit_append_duration_seconds_count"]; got < 9 {
		t.Errorf("audit appends timed: %v, want at least 9", got)
	}
	if after["go_goroutines"] == 0 || after["process_resident_memory_bytes"] == 0 {
		t.Error("the Go runtime and process collectors are missing")
	}
	for name := range after {
		if strings.Contains(name, "session") || strings.Contains(name, "sandbox_id") || strings.Contains(name, "m.txt") {
			t.Errorf("a label carries a session, sandbox id or argument: %s", name)
		}
	}
}

// scrape reads tg's metrics into a map from "name{labels}" to value.
func scrape(t *testing.T, tg *testGateway) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	tg.Metrics().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}
