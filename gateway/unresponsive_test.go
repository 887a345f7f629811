package gateway_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
)

// TestStoppedRunnerIsReplaced: sandbox code stops its own runner with
// SIGSTOP (it runs as the runner's uid; the runner is its shell's
// parent). The call in flight fails promptly saying the sandbox stopped
// answering; the next call runs in a replacement on the kept workspace
// and says so; the session works on.
func TestStoppedRunnerIsReplaced(t *testing.T) {
	t.Parallel()
	tg := defaultsGateway(t)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "keep.txt", "content": "still here"}))

	// Bounded by the test, far beyond the heartbeat's few seconds but
	// well inside the call timeout, so a wedge shows as a failure.
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	res, err := callErr(ctx, c, "run_shell", map[string]any{"command": "kill -STOP $PPID; sleep 30"})
	if err != nil {
		t.Fatalf("the call that stopped the runner: protocol error %v", err)
	}
	if !res.IsError || !strings.Contains(text(res), "stopped answering") {
		t.Fatalf("the call that stopped the runner: isError %v %q; want it to say the sandbox stopped answering", res.IsError, text(res))
	}

	res = mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "keep.txt"}))
	if got := allText(res); text(res) != "still here" || !strings.Contains(got, "stopped answering") || !strings.Contains(got, "/workspace was kept") {
		t.Fatalf("next call after the runner stopped: %q; want the file and a note that the sandbox was replaced", got)
	}
	if r, res := shell(t, c, "echo alive", nil); res.IsError || r.Stdout != "alive\n" {
		t.Fatalf("the session after the replacement: %s", text(res))
	}
	var reasons []string
	for _, e := range auditRecords(t, tg.AuditPath) {
		if e.Kind == audit.KindSandboxReplace && e.Session == c.GetSessionId() {
			reasons = append(reasons, e.Summary["reason"])
		}
	}
	if !slices.Equal(reasons, []string{"runner stopped answering"}) {
		t.Errorf("sandbox.replace records: %q, want one for a runner that stopped answering", reasons)
	}
}

// TestRunnerAnswersWhileSandboxSpins: a sandbox whose processes spin on
// more CPUs than it has still answers promptly: its user code runs niced
// below the runner, and the heartbeat never declares it dead. The
// latencies are logged (README numbers), not asserted.
func TestRunnerAnswersWhileSandboxSpins(t *testing.T) {
	t.Parallel()
	tg := defaultsGateway(t)
	c := legacyClient(t, tg.URL)
	r, res := shell(t, c, "nice; renice -n 0 -p $$ >/dev/null 2>&1 && echo reniced || echo refused", nil)
	if res.IsError || r.Stdout != "10\nrefused\n" {
		t.Fatalf("user code's priority: %q, want nice 10 that it cannot lower", r.Stdout)
	}
	spin := `for i in 1 2 3 4; do (while :; do :; done) & done; wait`
	if _, res := shell(t, c, spin, map[string]any{"background": true}); res.IsError {
		t.Fatalf("start the spinners: %s", text(res))
	}
	var took []time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		began := time.Now()
		res := call(t, c, "read_file", map[string]any{"path": "/etc/hostname"})
		took = append(took, time.Since(began))
		if res.IsError {
			t.Fatalf("canary call while the sandbox spins: %s", text(res))
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(took)
	t.Logf("read_file while 4 spinners use the sandbox's 1 CPU: %d calls, p50 %v, p99 %v, max %v",
		len(took), took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
}
