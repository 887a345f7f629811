package main

// Faults of the whole process: the real binary started with bad
// surroundings, and killed with SIGKILL under load.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// buildGateway builds the gateway binary into a temporary directory.
func buildGateway(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the gateway binary; skipped in -short mode")
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runToExit runs the binary to completion, bounded by a minute, and
// returns its exit code and stderr.
func runToExit(t *testing.T, env []string, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", bin, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("gateway did not exit within a minute; stderr:\n%s", stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func TestFaultRunnerMissing(t *testing.T) {
	t.Parallel()
	bin := buildGateway(t)
	missing := filepath.Join(t.TempDir(), "no-runner")
	code, stderr := runToExit(t, nil, bin, quietFlags("--auth", "none", "--addr", freeAddr(t), "--var", t.TempDir(), "--runner", missing)...)
	if code == 0 || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "make build") {
		t.Fatalf("exit %d; want non-zero and an error naming %s and `make build`; stderr:\n%s", code, missing, stderr)
	}
}

// TestFaultDockerUnreachable: the gateway exits non-zero with an error
// about the engine, and leaves nothing listening behind.
func TestFaultDockerUnreachable(t *testing.T) {
	t.Parallel()
	bin := buildGateway(t)
	runner := filepath.Join(t.TempDir(), "runner")
	if err := os.WriteFile(runner, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	code, stderr := runToExit(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, bin,
		quietFlags("--auth", "none", "--addr", addr, "--var", t.TempDir(), "--runner", runner)...)
	if code == 0 || !strings.Contains(stderr, "docker engine") || !strings.Contains(stderr, "start dockerd") {
		t.Fatalf("exit %d; want non-zero and an error about the Docker engine; stderr:\n%s", code, stderr)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("something still listens on %s after the gateway refused to start", addr)
	}
}

// proc is a gateway subprocess.
type proc struct {
	cmd     *exec.Cmd
	url     string
	exited  chan struct{}
	serving chan struct{} // closed when it logs "gateway serving"

	mu     sync.Mutex
	stderr bytes.Buffer
}

// logs returns what the gateway wrote to stderr so far.
func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startProc starts the binary and waits until it serves.
func startProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := launchProc(t, bin, args...)
	select {
	case <-p.serving:
	case <-p.exited:
		t.Fatalf("gateway exited before serving:\n%s", p.logs())
	case <-time.After(time.Minute):
		t.Fatalf("gateway not serving after a minute:\n%s", p.logs())
	}
	return p
}

// launchProc starts the binary and returns at once; it is killed when the
// test ends.
func launchProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, append(quietFlags("--auth", "none", "--addr", addr), args...)...)
	pr, pw := io.Pipe()
	p := &proc{cmd: cmd, url: "http://" + addr + "/mcp", exited: make(chan struct{}), serving: make(chan struct{})}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if strings.Contains(sc.Text(), "gateway serving") {
				once.Do(func() { close(p.serving) })
			}
		}
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// instanceContainers counts the containers, in any state, labelled with
// instance.
func instanceContainers(t *testing.T, instance string) int {
	t.Helper()
	cli, err := dockerclient.NewClientWithOpts(dockerclient.FromEnv, dockerclient.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cs, err := cli.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstance+"="+instance))})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// received is a tool result a client got, with the digest of the
// arguments that produced it.
type received struct {
	tool, digest string
	isError      bool
}

// loadWorker opens a 2025-11-25 session and calls run_shell, write_file
// and read_file in turn, each with a unique marker, until a call fails at
// the protocol level (the gateway died) or ctx ends; it sends every result
// it got.
func loadWorker(ctx context.Context, url string, w int, record func(received)) error {
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		return err
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "fault-load", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	for n := 0; ; n++ {
		marker := fmt.Sprintf("marker-%d-%d", w, n)
		calls := []struct {
			tool string
			args map[string]any
		}{
			{"run_shell", map[string]any{"command": "echo " + marker}},
			{"write_file", map[string]any{"path": marker + ".txt", "content": marker}},
			{"read_file", map[string]any{"path": marker + ".txt"}},
		}
		for _, cl := range calls {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = cl.tool, cl.args
			res, err := c.CallTool(ctx, req)
			if err != nil {
				return nil // the gateway is gone
			}
			record(received{tool: cl.tool, digest: audit.Digest(cl.args), isError: res.IsError})
		}
	}
}

// TestFaultSIGKILLUnderLoad: a gateway killed mid-load leaves containers
// and maybe a torn audit tail; restarted on the same var dir and instance
// it keeps the sessions' sandboxes for their owners (the shipped
// --on-idle pause: the first sweep pauses them), adds none, the log
// verifies, and every result a client received has its tool.end record
// (records are durable before results are sent).
func TestFaultSIGKILLUnderLoad(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireImage(t, "sandgate/base:latest")
	bin := buildGateway(t)
	runner := sandboxtest.RunnerBinary(t)
	varDir, err := os.MkdirTemp("", "sg") // short: socket paths
	if err != nil {
		t.Fatal(err)
	}
	instance := "fault" + randHex(5)
	t.Cleanup(func() { sandboxtest.RemoveDockerInstance(t, instance, varDir) })
	args := []string{"--var", varDir, "--instance", instance, "--runner", runner,
		"--max-sandboxes", "50", "--calls-per-minute", "100000"}
	p := startProc(t, bin, args...)

	const workers = 10
	var (
		mu  sync.Mutex
		got []received
		wg  sync.WaitGroup
	)
	record := func(r received) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loadWorker(t.Context(), p.url, w, record); err != nil {
				t.Errorf("worker %d: %v", w, err)
			}
		}()
	}
	// Kill once the load is well under way.
	for deadline := time.Now().Add(2 * time.Minute); count() < 150; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("load produced only %d results in two minutes:\n%s", count(), p.logs())
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	wg.Wait()
	before := instanceContainers(t, instance)
	if before == 0 {
		t.Fatal("no containers left after SIGKILL; the test did not load the gateway")
	}

	p2 := startProc(t, bin, args...)
	if n := instanceContainers(t, instance); n != before {
		t.Errorf("%d containers of instance %s after restart, want the %d the killed gateway left, kept", n, instance, before)
	}
	p2.cmd.Process.Signal(syscall.SIGTERM)
	<-p2.exited

	auditPath := filepath.Join(varDir, "audit", "audit.jsonl")
	if code, stderr := runToExit(t, nil, bin, "audit", "verify", auditPath); code != 0 {
		t.Fatalf("gateway audit verify after SIGKILL and restart: exit %d\n%s", code, stderr)
	}
	ended := map[string]bool{}
	for _, e := range readAudit(t, auditPath) {
		if e.Kind == audit.KindToolEnd || e.Kind == audit.KindToolDenied {
			ended[e.Tool+" "+e.ArgsDigest] = true
		}
	}
	missing := 0
	for _, r := range got {
		if !ended[r.tool+" "+r.digest] {
			missing++
			t.Errorf("%s result received (isError %v) but no tool.end record has args digest %s", r.tool, r.isError, r.digest)
		}
	}
	t.Logf("%d results received before SIGKILL, %d without a tool.end record", len(got), missing)
}

func readAudit(t *testing.T, path string) []audit.Event {
	t.Helper()
	events, err := audit.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// quietFlags returns args with what lets test gateways run side by side
// and start fast: metrics on a port of their own and no warm pool (the
// pool has tests of its own, in package gateway).
func quietFlags(args ...string) []string {
	return append([]string{"--metrics-addr", "127.0.0.1:0", "--pool-size", "0"}, args...)
}
