package gateway_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestSandboxCannotWriteHostDisk: a sandbox's /run/sandgate is its host
// socket dir (var/sockets/<id>), beside the audit log and outside every
// size limit. Neither an E2B upload there, nor write_file, nor a process
// in the sandbox may put a byte into it: the dir is sealed once the
// runner listens (sandbox/docker/socketdir.go). Before, all three landed
// on the host's disk.
func TestSandboxCannotWriteHostDisk(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	var made e2bCreated
	if resp := e2bCall(t, "POST", e2bBase(tg)+"/v2/sandboxes", nil, map[string]any{"templateID": "base"}, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", e2bBase(tg)+"/files?path=/run/sandgate/upload", strings.NewReader(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("E2b-Sandbox-Id", made.SandboxID)
	req.Header.Set("X-Access-Token", made.EnvdAccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(strings.ToLower(string(body)), "permission denied") {
		t.Errorf("E2B upload to /run/sandgate: %d %s; want a 4xx saying permission denied", resp.StatusCode, body)
	}

	c := modernClient(t, tg.URL)
	res := call(t, c, "write_file", map[string]any{"sandbox_id": made.SandboxID, "path": "/run/sandgate/written", "content": "x"})
	if !res.IsError {
		t.Errorf("write_file to /run/sandgate succeeded: %+v", res.Content)
	}
	res = mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"sandbox_id": made.SandboxID,
		"command": "dd if=/dev/zero of=/run/sandgate/fill bs=64k count=16 2>&1; echo rc=$?"}))
	if out := res.Content[0].(mcp.TextContent).Text; !strings.Contains(out, "Permission denied") || strings.Contains(out, "rc=0") {
		t.Errorf("dd into /run/sandgate: %s; want Permission denied", out)
	}
	ents, err := os.ReadDir(filepath.Join(tg.VarDir, "sockets", made.SandboxID))
	if err != nil || len(ents) != 1 || ents[0].Name() != "runner.sock" {
		t.Errorf("the host socket dir holds %v (%v); want only runner.sock", ents, err)
	}
}
