package gateway_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
)

// defaultsGateway starts a gateway with the shipped limits, untouched:
// what a user of `make run` gets.
func defaultsGateway(t *testing.T) *testGateway {
	t.Helper()
	return startGateway(t, func(c *gateway.Config) { c.Limits = sandbox.Limits{} })
}

// workspaceView mirrors sandbox_info's documented workspace field.
type workspaceView struct {
	Workspace struct {
		Disk       bool  `json:"disk"`
		QuotaBytes int64 `json:"quota_bytes"`
		UsedBytes  int64 `json:"used_bytes"`
	} `json:"workspace"`
}

// TestFullWorkspaceIsAnOrdinaryError fills /workspace with the shipped
// defaults (4 GiB on disk, 512 MiB of memory): the writer gets ENOSPC, and
// the sandbox, its other files and its background process survive.
// Before workspaces moved to disk this OOM-killed the runner and the next
// call ran in a fresh, empty sandbox.
func TestFullWorkspaceIsAnOrdinaryError(t *testing.T) {
	t.Parallel()
	tg := defaultsGateway(t)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "keep.txt", "content": "precious"}))
	bg, res := shell(t, c, "sleep 600", map[string]any{"background": true})
	if res.IsError || bg.ProcessID == "" {
		t.Fatalf("background start: %s", text(res))
	}

	r, res := shell(t, c, `dd if=/dev/zero of=/workspace/fill bs=1M count=5000; echo "dd exit $?"`, nil)
	t.Logf("dd: exit %d, oom %v, timed_out %v, %s / %s", r.ExitCode, r.OOMKilled, r.TimedOut, strings.TrimSpace(r.Stdout), strings.TrimSpace(r.Stderr))
	if !strings.Contains(r.Stderr, "No space left on device") || !strings.Contains(r.Stdout, "dd exit 1") {
		t.Fatalf("filling the workspace: want ENOSPC for dd, got %+v", r)
	}
	if r.OOMKilled || r.TimedOut {
		t.Fatalf("filling the workspace was an OOM kill or a timeout, not ENOSPC: %+v", r)
	}

	info := structuredAs[workspaceView](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))
	ws := info.Workspace
	t.Logf("sandbox_info workspace: %+v", ws)
	if !ws.Disk || ws.QuotaBytes < 3<<30 || ws.QuotaBytes > 4<<30 || ws.UsedBytes < ws.QuotaBytes*9/10 {
		t.Errorf("sandbox_info workspace = %+v, want a full 4 GiB disk workspace", ws)
	}

	// Same sandbox, same files, same background process.
	if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "keep.txt"}))); got != "precious" {
		t.Errorf("keep.txt after the fill = %q", got)
	}
	if list := text(mustOK(t, "process_list", call(t, c, "process_list", nil))); !strings.Contains(list, bg.ProcessID) || !strings.Contains(list, "sleep 600") {
		t.Errorf("the background process did not survive the fill: %s", list)
	}
	if r, res := shell(t, c, "rm /workspace/fill && echo freed", nil); res.IsError || r.Stdout != "freed\n" {
		t.Errorf("rm fill: %s", text(res))
	}

	// The host paid at most the quota for it.
	images, _ := filepath.Glob(filepath.Join(tg.VarDir, "workspaces", "*", "disk.ext4"))
	if len(images) != 1 {
		t.Fatalf("workspace images %v, want exactly the session's", images)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(images[0], &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 4<<30 {
		t.Errorf("the workspace image takes %d MiB of host disk, over its 4 GiB quota", used>>20)
	}
}
