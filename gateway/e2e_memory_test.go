package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// TestPauseKeepsMemoryGVisor: under gVisor a pause keeps the sandbox's
// memory. After sandbox_pause (with its defaults) and the next call,
// which resumes it and says its memory was restored, the browser still
// shows the page as it was left (a clicked button's text, which lives in
// the page's memory only), the stateful interpreter still has its
// variable, and a background server started before the pause still
// serves. keep_memory false pauses with the files only, and the next
// resume says processes are gone. Pause and resume are audited with what
// became of the memory.
func TestPauseKeepsMemoryGVisor(t *testing.T) {
	t.Parallel()
	b := startBrowserBoxOn(t, startGVisorGateway)
	b.ok("browser_navigate", map[string]any{"url": pageURL})
	ref, _ := b.snapshotRef(`button "Press me"`)
	b.ok("browser_click", map[string]any{"ref": ref})
	if got := b.eval("document.getElementById('status').textContent"); got != "clicked" {
		t.Fatalf("status before the pause = %v", got)
	}
	if r := structuredAs[interpResult](t, b.ok("run_code", map[string]any{"language": "python", "code": "kept = 41", "stateful": true})); r.Error != "" {
		t.Fatalf("interpreter: %s", r.Error)
	}

	began := time.Now()
	paused := structuredAs[map[string]any](t, b.ok("sandbox_pause", nil))
	t.Logf("pause with memory (Chromium, an interpreter, a server): %v", time.Since(began))
	if paused["state"] != "paused" || paused["memory_kept"] != true {
		t.Fatalf("sandbox_pause = %v, want paused with its memory kept", paused)
	}
	info := structuredAs[map[string]any](t, b.ok("sandbox_info", nil))
	if info["state"] != "paused" || info["memory_kept"] != true {
		t.Errorf("sandbox_info while paused = %v, want paused, memory kept", info)
	}
	if ws, _ := info["workspace"].(map[string]any); ws["host_bytes"] == nil || ws["host_bytes"].(float64) < 1<<20 {
		t.Errorf("a paused sandbox's host bytes %v do not count its memory", info["workspace"])
	}

	began = time.Now()
	res := b.ok("browser_evaluate", map[string]any{"expression": "document.getElementById('status').textContent"})
	t.Logf("resume with memory to the first browser result: %v", time.Since(began))
	if got := text(res); !strings.Contains(got, `"clicked"`) {
		t.Errorf("after the resume the page's status is %q, want the clicked text kept in memory", got)
	}
	if note := allText(res); !strings.Contains(note, "memory was restored") {
		t.Errorf("the resuming call's note: %q, want it to say the memory was restored", note)
	}
	if r := structuredAs[interpResult](t, b.ok("run_code", map[string]any{"language": "python", "code": "kept + 1", "stateful": true})); r.Result != "42" || r.Restarted {
		t.Errorf("after the resume `kept + 1` = %+v, want 42 from the same interpreter", r)
	}
	b.ok("browser_navigate", map[string]any{"url": pageURL}) // the server started before the pause

	// Files only.
	if paused := structuredAs[map[string]any](t, b.ok("sandbox_pause", map[string]any{"keep_memory": false})); paused["memory_kept"] == true {
		t.Fatalf("sandbox_pause keep_memory false = %v, want the memory dropped", paused)
	}
	res = b.ok("run_shell", map[string]any{"command": "echo back"})
	if note := allText(res); !strings.Contains(note, "processes, /tmp and interpreter state from before the pause are gone") {
		t.Errorf("a files-only resume's note: %q", note)
	}

	memory := map[string][]string{}
	for _, ev := range auditRecords(t, b.tg.AuditPath) {
		if ev.Kind == audit.KindSandboxPause || ev.Kind == audit.KindSandboxResume {
			memory[string(ev.Kind)] = append(memory[string(ev.Kind)], ev.Summary["memory"])
		}
	}
	if got := strings.Join(memory[string(audit.KindSandboxPause)], ","); got != "kept,dropped" {
		t.Errorf("sandbox.pause records say memory %q, want kept,dropped", got)
	}
	if got := strings.Join(memory[string(audit.KindSandboxResume)], ","); got != "restored,none" {
		t.Errorf("sandbox.resume records say memory %q, want restored,none", got)
	}
}

// TestForkKeepsMemoryGVisor: under gVisor a snapshot holds the sandbox's
// memory, and sandboxes made from it start where it was: sandbox_fork's
// copies have the clicked page open in their own Chromium and the
// interpreter's variable, each in its own sandbox, while the source runs
// on; sandbox_create from the snapshot says it started from its memory.
func TestForkKeepsMemoryGVisor(t *testing.T) {
	t.Parallel()
	b := startBrowserBoxOn(t, startGVisorGateway)
	b.ok("browser_navigate", map[string]any{"url": pageURL})
	ref, _ := b.snapshotRef(`button "Press me"`)
	b.ok("browser_click", map[string]any{"ref": ref})
	if r := structuredAs[interpResult](t, b.ok("run_code", map[string]any{"language": "python", "code": "kept = 41", "stateful": true})); r.Error != "" {
		t.Fatalf("interpreter: %s", r.Error)
	}

	snap := structuredAs[map[string]any](t, b.ok("sandbox_snapshot", map[string]any{"name": "clicked"}))
	if snap["memory"] != true {
		t.Fatalf("sandbox_snapshot under gVisor = %v, want it to hold the memory", snap)
	}
	if got := b.eval("document.getElementById('status').textContent"); got != "clicked" {
		t.Errorf("the source after its snapshot: status %v, want its page as it was", got)
	}

	began := time.Now()
	forked := structuredAs[map[string]any](t, b.ok("sandbox_fork", map[string]any{"count": 2}))
	t.Logf("2 forks with memory (Chromium, an interpreter): %v", time.Since(began))
	forks, _ := forked["forks"].([]any)
	if len(forks) != 2 {
		t.Fatalf("sandbox_fork = %v, want 2 forks", forked)
	}
	for _, f := range forks {
		f, _ := f.(map[string]any)
		id, _ := f["sandbox_id"].(string)
		if id == "" || f["memory_restored"] != true {
			t.Fatalf("fork %v: want a sandbox started from the memory", f)
		}
		res := mustOK(t, "browser_evaluate in a fork", call(t, b.c, "browser_evaluate",
			map[string]any{"sandbox_id": id, "expression": "document.getElementById('status').textContent"}))
		if !strings.Contains(text(res), `"clicked"`) {
			t.Errorf("fork %s's page: %q, want the source's clicked page", id, text(res))
		}
		r := structuredAs[interpResult](t, mustOK(t, "run_code in a fork", call(t, b.c, "run_code",
			map[string]any{"sandbox_id": id, "language": "python", "code": "kept + 1", "stateful": true})))
		if r.Result != "42" || r.Restarted {
			t.Errorf("fork %s: `kept + 1` = %+v, want 42 from the source's interpreter", id, r)
		}
		mustOK(t, "sandbox_destroy", call(t, b.c, "sandbox_destroy", map[string]any{"sandbox_id": id}))
	}

	res := mustOK(t, "sandbox_create from the snapshot", call(t, b.c, "sandbox_create", map[string]any{"snapshot": snap["snapshot_id"]}))
	created := structuredAs[map[string]any](t, res)
	if created["memory_kept"] != true || !strings.Contains(text(res), "started from the snapshot's memory") {
		t.Errorf("sandbox_create from a memory snapshot: %v %q", created, text(res))
	}
}

// TestMemoryCrashPointsGVisor: a gateway that dies while a snapshot with
// memory has the sandbox checkpointed (after the copies, before the
// restore; the snapshot's record not yet ready) leaves a sandbox paused
// with its memory, which the next gateway's first call restores, and no
// snapshot: the rollback deletes its files and its memory. The same
// state is a memory pause the gateway died after. (A crash before the
// checkpoint leaves a marked, running sandbox: TestPauseCrashPoints; one
// after the restore leaves a running sandbox and the unready record:
// TestSnapshotOnDocker.)
func TestMemoryCrashPointsGVisor(t *testing.T) {
	t.Parallel()
	tg := startGVisorGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := createOn(t, c, nil)
	code := func(c *client.Client, src string) (interpResult, string) {
		t.Helper()
		res := mustOK(t, "run_code", call(t, c, "run_code", map[string]any{"sandbox_id": id, "language": "python", "code": src, "stateful": true}))
		return structuredAs[interpResult](t, res), allText(res)
	}
	if r, _ := code(c, "kept = 41"); r.Error != "" {
		t.Fatalf("interpreter: %s", r.Error)
	}
	snap := structuredAs[map[string]any](t, mustOK(t, "sandbox_snapshot", call(t, c, "sandbox_snapshot", map[string]any{"sandbox_id": id})))
	snapID, _ := snap["snapshot_id"].(string)
	if snap["memory"] != true {
		t.Fatalf("sandbox_snapshot under gVisor = %v, want it to hold the memory", snap)
	}
	snapDir := filepath.Join(tg.VarDir, "workspaces", "_snapshots", snapID)
	if _, err := os.Stat(filepath.Join(snapDir, "memory")); err != nil {
		t.Fatalf("the snapshot's memory: %v", err)
	}
	editSnapshotRecord(t, tg, snapID, "ready", false)
	if p := structuredAs[map[string]any](t, mustOK(t, "sandbox_pause", call(t, c, "sandbox_pause", map[string]any{"sandbox_id": id}))); p["memory_kept"] != true {
		t.Fatalf("sandbox_pause = %v, want the memory kept", p)
	}
	tg.crash()

	tg2 := restart(t, tg)
	if left := tg2.listed(t); len(left) != 1 || left[0].State != sandbox.StatePaused || !left[0].MemoryKept {
		t.Fatalf("after the restart: %+v; want the sandbox alone, paused with its memory", left)
	}
	if _, err := os.Stat(snapDir); !os.IsNotExist(err) {
		t.Errorf("the unfinished snapshot's files and memory after the restart: %v; want them deleted", err)
	}
	c2 := modernClient(t, tg2.URL)
	r, note := code(c2, "kept + 1")
	if r.Result != "42" || r.Restarted || !strings.Contains(note, "memory was restored") {
		t.Fatalf("the first call after the restart: `kept + 1` = %+v, note %q; want 42 from the restored interpreter", r, note)
	}
	if l := structuredAs[map[string]any](t, mustOK(t, "snapshot_list", call(t, c2, "snapshot_list", nil)))["snapshots"].([]any); len(l) != 0 {
		t.Errorf("snapshot_list after the rollback: %v", l)
	}
}
