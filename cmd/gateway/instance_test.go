package main

// Two gateway processes on one Docker engine and instance: the second must
// never remove the first one's sandboxes as orphans.

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// instanceVarDir makes a short var dir (socket paths) that is cleaned up
// with the instance's containers and workspaces.
func instanceVarDir(t *testing.T, instance string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sandboxtest.RemoveDockerInstance(t, instance, dir) })
	return dir
}

// sessionWithFile opens a 2025-11-25 session on url and writes a file in
// its sandbox.
func sessionWithFile(t *testing.T, url string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "instance-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	if res := callTool(t, c, "write_file", map[string]any{"path": "mine.txt", "content": "first gateway"}); res.IsError {
		t.Fatalf("write_file: %v", res.Content)
	}
	return c
}

func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// TestSecondGatewayRefused: a second gateway process on a live gateway's
// instance exits non-zero naming the holder and --instance, and the first
// one's session and sandbox are untouched.
func TestSecondGatewayRefused(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireImage(t, "sandgate/base:latest")
	bin := buildGateway(t)
	runner := sandboxtest.RunnerBinary(t)
	instance := "inst" + randHex(5)
	first := startProc(t, bin, "--var", instanceVarDir(t, instance), "--instance", instance, "--runner", runner)
	c := sessionWithFile(t, first.url)

	code, stderr := runToExit(t, nil, bin, quietFlags("--auth", "none", "--addr", freeAddr(t), "--var", instanceVarDir(t, instance),
		"--instance", instance, "--runner", runner)...)
	if code == 0 || !strings.Contains(stderr, "held by another live gateway") || !strings.Contains(stderr, "--instance") ||
		!strings.Contains(stderr, fmt.Sprintf("pid %d", first.cmd.Process.Pid)) {
		t.Fatalf("second gateway: exit %d; want non-zero, naming the first one's pid and --instance; stderr:\n%s", code, stderr)
	}
	if n := instanceContainers(t, instance); n != 1 {
		t.Fatalf("%d containers of the instance after the refused start, want the first gateway's 1", n)
	}
	res := callTool(t, c, "read_file", map[string]any{"path": "mine.txt"})
	if res.IsError || len(res.Content) == 0 || res.Content[0].(mcp.TextContent).Text != "first gateway" {
		t.Fatalf("the first gateway's session after the refused start: %+v", res.Content)
	}
}

// TestRestartOverlapsOldProcess: a new gateway started while the old one
// is still up waits for it, and serves once the old one has shut down.
func TestRestartOverlapsOldProcess(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireImage(t, "sandgate/base:latest")
	bin := buildGateway(t)
	runner := sandboxtest.RunnerBinary(t)
	instance := "inst" + randHex(5)
	varDir := instanceVarDir(t, instance)
	old := startProc(t, bin, "--var", varDir, "--instance", instance, "--runner", runner)
	sessionWithFile(t, old.url)

	// Stop the old gateway once the new one says it waits for it.
	next := launchProc(t, bin, "--var", varDir, "--instance", instance, "--runner", runner)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(next.logs(), "waiting for it to exit"); time.Sleep(20 * time.Millisecond) {
		select {
		case <-next.serving:
			t.Fatalf("the new gateway served while the old one held the instance; its log:\n%s", next.logs())
		case <-next.exited:
			t.Fatalf("the new gateway exited instead of waiting; its log:\n%s", next.logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new gateway did not start waiting within a minute; its log:\n%s", next.logs())
		}
	}
	if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-old.exited
	select {
	case <-next.serving:
	case <-next.exited:
		t.Fatalf("the new gateway exited instead of taking over; its log:\n%s", next.logs())
	case <-time.After(time.Minute):
		t.Fatalf("the new gateway did not serve within a minute of the old one's exit; its log:\n%s", next.logs())
	}
	c := sessionWithFile(t, next.url)
	if res := callTool(t, c, "run_shell", map[string]any{"command": "echo ok"}); res.IsError {
		t.Fatalf("new gateway: %+v", res.Content)
	}
}
