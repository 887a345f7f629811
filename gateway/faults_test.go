package gateway_test

// Faults around a running gateway: its sandbox killed from outside, its
// image missing, its audit disk full.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dockerclient "github.com/docker/docker/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
)

// faultDocker returns a client of the local engine, closed at cleanup.
func faultDocker(t testing.TB) *dockerclient.Client {
	t.Helper()
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestFaultSandboxKilled: a session's container killed from outside makes
// the next call end promptly, either with an error that says the sandbox
// is gone or with a replacement sandbox that says the previous one died.
func TestFaultSandboxKilled(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	boxes := tg.containers(t)
	if len(boxes) != 1 {
		t.Fatalf("%d containers, want 1", len(boxes))
	}
	if err := faultDocker(t).ContainerKill(t.Context(), boxes[0].ContainerID, "KILL"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	res, err := callErr(ctx, c, "run_shell", map[string]any{"command": "echo alive"})
	if err != nil {
		t.Fatalf("call after the sandbox was killed: protocol error %v (want an isError result)", err)
	}
	t.Logf("after kill: isError=%v %q", res.IsError, text(res))
	checkGoneOrReplaced(t, res)
}

// checkGoneOrReplaced fails unless res, the answer to a call whose sandbox
// died, says the sandbox is gone or that it was replaced.
func checkGoneOrReplaced(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	msg := strings.ToLower(allText(res))
	switch {
	case res.IsError:
		if !strings.Contains(msg, "sandbox") || !mentionsAny(msg, "died", "gone", "dead", "lost", "not running", "destroyed", "not found") {
			t.Fatalf("error after the sandbox died does not say the sandbox is gone: %q", msg)
		}
	case !mentionsAny(msg, "died", "previous sandbox", "replaced", "new sandbox"):
		t.Fatalf("call succeeded after the sandbox died without saying it was replaced: %q", msg)
	}
}

func mentionsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestFaultImageMissing: a default image that is not in the engine makes
// tool calls fail with an error naming the image and `make images`.
func TestFaultImageMissing(t *testing.T) {
	t.Parallel()
	const image = "sandgate/does-not-exist:never"
	tg := startGateway(t, func(cfg *gateway.Config) { cfg.Image = image })
	c := legacyClient(t, tg.URL)
	res := call(t, c, "run_shell", map[string]any{"command": "true"})
	if !res.IsError || !strings.Contains(text(res), image) || !strings.Contains(text(res), "make images") {
		t.Fatalf("want an error naming %s and `make images`, got isError=%v %q", image, res.IsError, text(res))
	}
}

// auditTmpfs returns a var dir whose audit/ is a tmpfs of size bytes,
// unmounted at cleanup. It skips unless the test runs as root.
func auditTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs for the audit log needs root")
	}
	varDir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(varDir, "audit")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	// Registered before the gateway's own cleanups, so it runs after them.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
		os.RemoveAll(varDir)
	})
	return varDir
}

// fillDisk writes to a file in dir until the file system is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Smaller and smaller writes take the last bytes too.
	for n := 64 << 10; n > 0; n /= 2 {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
	}
}

// TestFaultAuditDiskFull: on a full audit disk no call returns a result
// unaudited. A call whose tool.start record still fits (in the last,
// partly used block of the log) runs but has its result withheld; once no
// tool.start fits the gateway refuses calls, saying why, without running
// them.
func TestFaultAuditDiskFull(t *testing.T) {
	t.Parallel()
	varDir := auditTmpfs(t, "256k")
	tg := startGateway(t, func(cfg *gateway.Config) { cfg.VarDir = varDir })
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))

	fillDisk(t, filepath.Dir(tg.AuditPath))
	refused := -1
	for n := 0; n < 100 && refused < 0; n++ {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		res, err := callErr(ctx, c, "run_shell", map[string]any{"command": fmt.Sprintf("touch /workspace/ran-%d", n)})
		cancel()
		if err != nil {
			t.Fatalf("call %d with the audit disk full: protocol error %v (want an isError result)", n, err)
		}
		msg := text(res)
		switch {
		case !res.IsError:
			t.Fatalf("call %d returned a result with the audit disk full", n)
		case strings.Contains(msg, "refusing to run run_shell unaudited"):
			refused = n
		case !strings.Contains(msg, "result is withheld"):
			t.Fatalf("call %d: want an error about the audit log, got %q", n, msg)
		}
	}
	if refused < 0 {
		t.Fatal("the gateway never refused a call with the audit disk full")
	}

	// With space again, the gateway audits and runs calls again; the
	// refused command did not run.
	if err := os.Remove(filepath.Join(filepath.Dir(tg.AuditPath), "filler")); err != nil {
		t.Fatal(err)
	}
	r, _ := shell(t, c, fmt.Sprintf("test -e /workspace/ran-%d && echo ran || echo clean", refused), nil)
	if strings.TrimSpace(r.Stdout) != "clean" {
		t.Fatalf("the refused command ran: %q", r.Stdout)
	}
	t.Logf("calls 0..%d ran with results withheld; call %d was refused", refused-1, refused)
}
