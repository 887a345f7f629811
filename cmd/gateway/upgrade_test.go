package main

// An upgrade: stop the gateway the way an operator does (SIGTERM), start
// another build on the same var dir and instance, and every sandbox a
// client could still name answers with its files.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestUpgradeKeepsSandboxes: a sessionless MCP sandbox and an E2B sandbox
// (30-minute timeout, a file each in /workspace) outlive a SIGTERM and a
// start of a second build; the warm pool's and the legacy session's
// containers go with the old process. Before, the stop destroyed every
// sandbox with its files (audit: sandbox.destroy, reason shutdown).
func TestUpgradeKeepsSandboxes(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireImage(t, "sandgate/base:latest")
	oldBin, newBin := buildGateway(t), buildGatewayFlags(t, "-ldflags=-X=main.upgradeTest=next")
	runner := sandboxtest.RunnerBinary(t)
	instance := "upg" + randHex(5)
	varDir := instanceVarDir(t, instance)
	args := []string{"--var", varDir, "--instance", instance, "--runner", runner, "--pool-size", "2"}
	old := startProc(t, oldBin, args...)

	mc := sessionlessClient(t, old.url)
	mcpID := toolJSON(t, mc, "sandbox_create", nil)["sandbox_id"].(string)
	if res := callTool(t, mc, "write_file", map[string]any{"sandbox_id": mcpID, "path": "mcp.txt", "content": "from MCP"}); res.IsError {
		t.Fatalf("write_file: %+v", res.Content)
	}
	base := strings.TrimSuffix(old.url, "/mcp")
	var made struct {
		SandboxID       string `json:"sandboxID"`
		EnvdAccessToken string `json:"envdAccessToken"`
	}
	if code := httpJSON(t, "POST", base+"/v2/sandboxes", nil, `{"templateID":"base","timeout":1800,"metadata":{"job":"upgrade"}}`, &made); code != http.StatusCreated {
		t.Fatalf("E2B create: %d", code)
	}
	envd := map[string]string{"E2b-Sandbox-Id": made.SandboxID, "X-Access-Token": made.EnvdAccessToken, "Content-Type": "application/octet-stream"}
	if code := httpJSON(t, "POST", base+"/files?path=e2b.txt", envd, "from E2B", nil); code != http.StatusOK {
		t.Fatalf("E2B upload: %d", code)
	}
	sessionWithFile(t, old.url) // a legacy session's sandbox: it goes

	if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the gateway did not stop within 2 minutes of SIGTERM:\n%s", old.logs())
	}
	if code := old.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, old.logs())
	}
	if n := instanceContainers(t, instance); n != 2 {
		t.Fatalf("%d containers after the stop; want the 2 sessionless ones (pool and legacy session removed)", n)
	}

	next := startProc(t, newBin, args...)
	mc = sessionlessClient(t, next.url)
	res := callTool(t, mc, "read_file", map[string]any{"sandbox_id": mcpID, "path": "mcp.txt"})
	if res.IsError || res.Content[0].(mcp.TextContent).Text != "from MCP" {
		t.Errorf("the MCP sandbox after the upgrade: %+v", res.Content)
	}
	base = strings.TrimSuffix(next.url, "/mcp")
	var got string
	if code := httpJSON(t, "GET", base+"/files?path=e2b.txt", envd, "", &got); code != http.StatusOK || got != "from E2B" {
		t.Errorf("the E2B sandbox's file after the upgrade: %d %q", code, got)
	}
	var info struct {
		Metadata map[string]string `json:"metadata"`
		EndAt    time.Time         `json:"endAt"`
	}
	if code := httpJSON(t, "GET", base+"/sandboxes/"+made.SandboxID, nil, "", &info); code != http.StatusOK ||
		info.Metadata["job"] != "upgrade" || time.Until(info.EndAt) < 20*time.Minute {
		t.Errorf("the E2B sandbox after the upgrade: %d %+v; want its metadata and its 30-minute timeout", code, info)
	}
	rep, err := audit.VerifyFile(filepath.Join(varDir, "audit", "audit.jsonl"))
	if err != nil || !rep.OK() {
		t.Fatalf("audit log after the upgrade: %+v %v", rep, err)
	}
}

// buildGatewayFlags builds the gateway with extra go build flags: a second
// build of the same tree, another binary (go records the flags in it). Only
// link flags keep it cheap: compile flags would rebuild every package.
func buildGatewayFlags(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gateway")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// sessionlessClient connects a client of mcp-go's newest protocol
// version (sessionless, 2026-07-28) to url.
func sessionlessClient(t *testing.T, url string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "upgrade-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// toolJSON calls tool and returns its structured result.
func toolJSON(t *testing.T, c *client.Client, tool string, args map[string]any) map[string]any {
	t.Helper()
	res := callTool(t, c, tool, args)
	m, ok := res.StructuredContent.(map[string]any)
	if res.IsError || !ok {
		t.Fatalf("%s: %+v", tool, res.Content)
	}
	return m
}

// httpJSON sends body to u and decodes a JSON answer into out (a *string
// takes the raw body); it returns the status.
func httpJSON(t *testing.T, method, u string, header map[string]string, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	switch o := out.(type) {
	case nil:
	case *string:
		*o = string(raw)
	default:
		if err := json.NewDecoder(bytes.NewReader(raw)).Decode(out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, u, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}
