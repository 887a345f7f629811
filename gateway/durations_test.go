package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestLocalHugeDurations: a duration from the network is checked before
// it is multiplied into a time.Duration. 18446744074 seconds, multiplied,
// wrapped around to 0.29 s, and the E2B API killed the sandbox with its
// files; a run_shell timeout of 1e300 converted to a negative Duration.
// Now the E2B API answers 400 with the range and the sandbox keeps its
// timeout; MCP timeouts above the limit mean the limit.
func TestLocalHugeDurations(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	base := e2bBase(tg)
	huge := int64(18446744074)

	var made e2bCreated
	if resp := e2bCall(t, "POST", base+"/v2/sandboxes", nil, map[string]any{"templateID": "base", "timeout": huge}, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("create with timeout %d: %d, want 400", huge, resp.StatusCode)
	}
	if resp := e2bCall(t, "POST", base+"/v2/sandboxes", nil, map[string]any{"templateID": "base", "timeout": 300}, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	var before e2bListed
	e2bCall(t, "GET", base+"/sandboxes/"+made.SandboxID, nil, nil, &before)
	for _, tc := range []struct{ path, field string }{
		{"/timeout", "timeout"}, {"/refreshes", "duration"}, {"/connect", "timeout"},
	} {
		var reply struct {
			Message string `json:"message"`
		}
		resp := e2bCall(t, "POST", base+"/sandboxes/"+made.SandboxID+tc.path, nil, map[string]any{tc.field: huge}, &reply)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(reply.Message, tc.field+" must be between 1 and") {
			t.Errorf("%s with %s %d: %d %q; want 400 saying the range", tc.path, tc.field, huge, resp.StatusCode, reply.Message)
		}
	}
	var after e2bListed
	if resp := e2bCall(t, "GET", base+"/sandboxes/"+made.SandboxID, nil, nil, &after); resp.StatusCode != http.StatusOK || !after.EndAt.Equal(before.EndAt) {
		t.Fatalf("the sandbox after the refused timeouts: %d, endAt %v (was %v)", resp.StatusCode, after.EndAt, before.EndAt)
	}

	c := modernClient(t, tg.URL)
	id := map[string]any{"sandbox_id": made.SandboxID}
	res := mustOK(t, "run_shell", call(t, c, "run_shell", with(id, map[string]any{"command": "echo ok", "timeout": 1e300})))
	if r := structuredAs[execResult](t, res); r.ExitCode != 0 || r.Stdout != "ok\n" {
		t.Errorf("run_shell with timeout 1e300: %+v", r)
	}
	bg := structuredAs[map[string]any](t, mustOK(t, "run_shell", call(t, c, "run_shell", with(id, map[string]any{"command": "sleep 600", "background": true, "timeout": 1e300}))))
	out := structuredAs[map[string]any](t, mustOK(t, "process_output", call(t, c, "process_output", with(id, map[string]any{"process_id": bg["process_id"]}))))
	if p, _ := out["process"].(map[string]any); p["running"] != true {
		t.Errorf("a background process started with timeout 1e300: %v; want it running", p)
	}
}

// with returns a copy of args with extra's entries added.
func with(args, extra map[string]any) map[string]any {
	m := make(map[string]any, len(args)+len(extra))
	for k, v := range args {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}
