package gateway_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

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

// workspaceIDs lists the sandbox ids that have a workspace on the host.
func workspaceIDs(t *testing.T, tg *testGateway) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(tg.VarDir, "workspaces"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// waitNoWorkspace waits until the sandbox's workspace is gone from the host.
func waitNoWorkspace(t *testing.T, tg *testGateway, id, after string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for slices.Contains(workspaceIDs(t, tg), id) {
		if time.Now().After(deadline) {
			t.Fatalf("workspace of %s still on the host 30 s after %s", id, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createSandbox calls sandbox_create and returns the new sandbox_id.
func createSandbox(t *testing.T, c *client.Client) string {
	t.Helper()
	created := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))
	id, _ := created["sandbox_id"].(string)
	if id == "" {
		t.Fatalf("sandbox_create gave no sandbox_id: %v", created)
	}
	return id
}

// TestWorkspaceRemovedWithItsSandbox: sandbox_destroy and the end of a
// session (DELETE) remove the workspace from the host along with the
// container.
func TestWorkspaceRemovedWithItsSandbox(t *testing.T) {
	t.Parallel()
	tg := defaultsGateway(t)
	modern := modernClient(t, tg.URL)
	id := createSandbox(t, modern)
	mustOK(t, "write_file", call(t, modern, "write_file", map[string]any{"path": "f", "content": "x", "sandbox_id": id}))
	if !slices.Contains(workspaceIDs(t, tg), id) {
		t.Fatalf("no workspace for %s on the host: %v", id, workspaceIDs(t, tg))
	}
	mustOK(t, "sandbox_destroy", call(t, modern, "sandbox_destroy", map[string]any{"sandbox_id": id}))
	waitNoWorkspace(t, tg, id, "sandbox_destroy")

	legacy := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, legacy, "write_file", map[string]any{"path": "f", "content": "x"}))
	boxes := tg.containers(t)
	if len(boxes) != 1 {
		t.Fatalf("%d containers, want the session's 1", len(boxes))
	}
	if err := legacy.Close(); err != nil { // sends DELETE
		t.Fatal(err)
	}
	waitNoWorkspace(t, tg, boxes[0].ID, "the session's DELETE")
}

// TestNamedSandboxReplacedOnItsWorkspace: a sandbox_create sandbox whose
// container is killed from outside keeps its id and its files; the next
// call runs in a replacement container and says so.
func TestNamedSandboxReplacedOnItsWorkspace(t *testing.T) {
	t.Parallel()
	tg := defaultsGateway(t)
	c := modernClient(t, tg.URL)
	id := createSandbox(t, c)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "notes.txt", "content": "kept", "sandbox_id": id}))
	boxes := tg.containers(t)
	if len(boxes) != 1 {
		t.Fatalf("%d containers, want 1", len(boxes))
	}
	if err := hostDocker(t).ContainerKill(t.Context(), boxes[0].ContainerID, "KILL"); err != nil {
		t.Fatal(err)
	}
	res := mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "notes.txt", "sandbox_id": id}))
	if got := allText(res); text(res) != "kept" || !strings.Contains(got, "/workspace was kept") {
		t.Fatalf("read_file after the container was killed = %q; want the file, and a note that the sandbox was replaced on its workspace", got)
	}
	after := tg.containers(t)
	if len(after) != 1 || after[0].ID != id || after[0].ContainerID == boxes[0].ContainerID {
		t.Fatalf("containers after replacement: %+v; want one new container for sandbox %s", after, id)
	}
}

// TestRestartRemovesOrphanWorkspaces: with --on-idle destroy, a crashed
// gateway's session sandboxes are removed by its successor, workspaces
// included, without following the symlinks a sandbox planted in its
// workspace.
func TestRestartRemovesOrphanWorkspaces(t *testing.T) {
	t.Parallel()
	destroy := func(c *gateway.Config) { c.OnIdle = "destroy" }
	tg := startGateway(t, destroy)
	victim := t.TempDir()
	canary := filepath.Join(victim, "canary")
	if err := os.WriteFile(canary, []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := legacyClient(t, tg.URL)
	// The links point at host paths: followed on the host, a removal
	// would delete the canary (or the host's root).
	r, res := shell(t, c, "ln -s "+victim+" /workspace/victim && ln -s / /workspace/root && mkdir -p d && ln -s "+victim+" d/deep && echo planted", nil)
	if res.IsError || r.Stdout != "planted\n" {
		t.Fatalf("plant symlinks: %s", text(res))
	}
	if n := len(workspaceIDs(t, tg)); n != 1 {
		t.Fatalf("%d workspaces, want the session's 1", n)
	}
	tg.crash()
	tg2 := restart(t, tg, destroy)
	if ids := workspaceIDs(t, tg2); len(ids) != 0 {
		t.Fatalf("workspaces after restart: %v, want none", ids)
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "host file" {
		t.Fatalf("the host file behind a planted symlink: %q, %v", b, err)
	}
}

// TestPeriodicReconcile: a sandbox of the instance that the gateway does
// not track (a create that outlived its caller, a failed removal) is
// removed by the periodic reconciliation once past the grace period; the
// gateway's own sandboxes are left alone.
func TestPeriodicReconcile(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) {
		c.ReconcileInterval = 200 * time.Millisecond
		c.ReconcileGrace = 2 * time.Second
	})
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "mine", "content": "x"}))
	lost, err := tg.Provider.Create(t.Context(), sandbox.Spec{Owner: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for slices.Contains(workspaceIDs(t, tg), lost.ID()) {
		if time.Now().After(deadline) {
			t.Fatalf("untracked sandbox %s not removed within a minute", lost.ID())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(tg.containers(t)); n != 1 {
		t.Fatalf("%d containers after reconciliation, want the session's 1", n)
	}
	if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "mine"}))); got != "x" {
		t.Fatalf("the session's own sandbox after reconciliation: %q", got)
	}
}

// TestAdoptedSandboxesAreReplacedOnTheirWorkspace: a restarted gateway
// adopts its predecessor's sessionless sandboxes; one whose container
// stopped while no gateway ran, and one whose runner socket is gone (the
// sandbox cannot remove it: its dir is sealed; here the host loses it),
// are each replaced on their first call, with their files.
func TestAdoptedSandboxesAreReplacedOnTheirWorkspace(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	stopped, unreachable := createSandbox(t, c), createSandbox(t, c)
	for _, id := range []string{stopped, unreachable} {
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "notes.txt", "content": "kept " + id, "sandbox_id": id}))
	}
	if err := os.Remove(filepath.Join(tg.VarDir, "sockets", unreachable, "runner.sock")); err != nil {
		t.Fatal(err)
	}
	tg.crash()
	for _, info := range tg.containers(t) {
		if info.ID == stopped {
			if err := hostDocker(t).ContainerKill(t.Context(), info.ContainerID, "KILL"); err != nil {
				t.Fatal(err)
			}
		}
	}
	tg2 := restart(t, tg)
	c2 := modernClient(t, tg2.URL) // the same principal: auth is off in these tests
	for _, id := range []string{stopped, unreachable} {
		res := mustOK(t, "read_file", call(t, c2, "read_file", map[string]any{"path": "notes.txt", "sandbox_id": id}))
		if got := allText(res); text(res) != "kept "+id || !strings.Contains(got, "/workspace was kept") {
			t.Errorf("sandbox %s after the restart: %q; want its file and a note that it was replaced", id, got)
		}
	}
}
