package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
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
