package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	dockerapi "github.com/docker/docker/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// TestPauseAndResume: sandbox_pause ends a sandbox's processes and stops
// its container, keeping its id and /workspace; sandbox_info says it is
// paused without resuming it; concurrent first calls resume it once, the
// one that did saying so beside its answer; /tmp starts empty; each
// pause and resume is audited with its reason; and a restarted gateway
// adopts a paused sandbox paused and resumes it on its next call.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
	with := func(args map[string]any) map[string]any { args["sandbox_id"] = id; return args }
	mustOK(t, "write_file", call(t, c, "write_file", with(map[string]any{"path": "kept.txt", "content": "kept over a pause"})))
	mustOK(t, "run_shell", call(t, c, "run_shell", with(map[string]any{"command": "echo gone > /tmp/gone.txt"})))

	res := mustOK(t, "sandbox_pause", call(t, c, "sandbox_pause", with(map[string]any{})))
	if got := structuredAs[map[string]any](t, res)["state"]; got != "paused" {
		t.Fatalf("sandbox_pause answered state %v", got)
	}
	mustOK(t, "sandbox_pause again", call(t, c, "sandbox_pause", with(map[string]any{})))
	if infos, err := tg.Provider.List(t.Context(), sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].State != sandbox.StatePaused {
		t.Fatalf("the provider lists %+v, %v; want the sandbox paused", infos, err)
	}
	if state := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", with(map[string]any{}))))["state"]; state != "paused" {
		t.Errorf("sandbox_info says state %v, want paused", state)
	}
	if infos, _ := tg.Provider.List(t.Context(), sandbox.Filter{ID: id}); len(infos) != 1 || infos[0].State != sandbox.StatePaused {
		t.Errorf("sandbox_info resumed the sandbox: %+v", infos)
	}

	const callers = 4
	results := make([]*mcp.CallToolResult, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			results[i], errs[i] = callErr(t.Context(), c, "read_file", with(map[string]any{"path": "kept.txt"}))
		})
	}
	wg.Wait()
	resumedNotes := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("read_file %d: %v", i, errs[i])
		}
		if got := text(mustOK(t, "read_file after the pause", r)); got != "kept over a pause" {
			t.Errorf("read_file %d after the pause = %q", i, got)
		}
		if r.Meta != nil && r.Meta.GetMetaField("sandgate.dev/sandbox-resumed") != nil {
			resumedNotes++
			if note := allText(r); !strings.Contains(note, "was paused") || !strings.Contains(note, "/workspace is as it was") {
				t.Errorf("the resuming call's note: %q", note)
			}
		}
	}
	if resumedNotes != 1 {
		t.Errorf("%d of %d concurrent first calls say they resumed the sandbox, want 1", resumedNotes, callers)
	}
	tmp := mustOK(t, "run_shell", call(t, c, "run_shell", with(map[string]any{"command": "cat /tmp/gone.txt 2>/dev/null || echo none"})))
	if !strings.Contains(text(tmp), "none") {
		t.Errorf("/tmp after the pause: %q, want it empty", text(tmp))
	}

	mustOK(t, "sandbox_pause before the restart", call(t, c, "sandbox_pause", with(map[string]any{})))
	tg.Close()
	tg2 := restart(t, tg)
	c2 := modernClient(t, tg2.URL)
	if state := structuredAs[map[string]any](t, mustOK(t, "sandbox_info after restart", call(t, c2, "sandbox_info", with(map[string]any{}))))["state"]; state != "paused" {
		t.Errorf("after a restart sandbox_info says state %v, want paused", state)
	}
	r := mustOK(t, "read_file after restart", call(t, c2, "read_file", with(map[string]any{"path": "kept.txt"})))
	if text(r) != "kept over a pause" || r.Meta == nil || r.Meta.GetMetaField("sandgate.dev/sandbox-resumed") == nil {
		t.Errorf("read_file after restart = %q, meta %v; want the file and the resume note", text(r), r.Meta)
	}

	var pauses, resumes []string
	for _, ev := range auditRecords(t, tg2.AuditPath) { // the restarted gateway's log is the first one's, continued
		if ev.SandboxID != id {
			continue
		}
		switch ev.Kind {
		case audit.KindSandboxPause:
			pauses = append(pauses, ev.Summary["reason"]+"/"+ev.Outcome)
		case audit.KindSandboxResume:
			resumes = append(resumes, ev.Summary["reason"]+"/"+ev.Outcome)
		}
	}
	if strings.Join(pauses, ",") != "sandbox_pause/ok,sandbox_pause/ok" || strings.Join(resumes, ",") != "call/ok,call/ok" {
		t.Errorf("audit: pauses %v, resumes %v; want two of each, for sandbox_pause and a call", pauses, resumes)
	}
}

// TestPauseCrashPoints: a gateway that dies in the middle of a pause or
// a resume leaves the sandbox running or paused, with its files, never
// neither and never two copies; the next gateway carries on from what it
// finds. The Docker provider's steps leave two states between the
// finished ones, made here by hand before a crash: the pause marker
// written while the container still runs (a pause cut short before the
// stop, or a resume cut short after the start), and a stopped container
// with the marker (a pause cut short after the stop, before the gateway
// took note, or a resume cut short before the start).
func TestPauseCrashPoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		stopped bool // the container was stopped before the crash
	}{
		{name: "marked, still running", stopped: false},
		{name: "marked and stopped", stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := startGateway(t, nil)
			c := modernClient(t, tg.URL)
			id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
			mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": id, "path": "kept.txt", "content": "kept"}))
			if err := os.WriteFile(filepath.Join(tg.VarDir, "sockets", id, "paused"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.stopped {
				stopContainer(t, tg.containers(t)[0].ContainerID)
			}
			tg.crash()
			tg2 := restart(t, tg)
			want := "running"
			if tc.stopped {
				want = sandbox.StatePaused
			}
			if left := tg2.listed(t); len(left) != 1 || left[0].ID != id || left[0].State != want {
				t.Fatalf("after the restart: %+v; want sandbox %s alone, %s", left, id, want)
			}
			c2 := modernClient(t, tg2.URL)
			res := mustOK(t, "read_file", call(t, c2, "read_file", map[string]any{"sandbox_id": id, "path": "kept.txt"}))
			if text(res) != "kept" || strings.Contains(allText(res), "was paused") != tc.stopped {
				t.Fatalf("read_file after the restart: %q; want the file, with a resume note only if it was stopped", allText(res))
			}
			if left := tg2.containers(t); len(left) != 1 || left[0].State != "running" {
				t.Fatalf("containers after the call: %+v; want one, running", left)
			}
		})
	}
}

// stopContainer stops a container through the engine, as a pause does.
func stopContainer(t *testing.T, id string) {
	t.Helper()
	cli, err := dockerapi.NewClientWithOpts(dockerapi.FromEnv, dockerapi.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := cli.ContainerStop(t.Context(), id, container.StopOptions{}); err != nil {
		t.Fatal(err)
	}
}
