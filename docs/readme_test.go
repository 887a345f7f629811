package docs_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// readmeMarker precedes, in README.md, the fenced block a user copies to
// talk to a gateway with curl; TestReadmeCurlSession runs that block.
const readmeMarker = "<!-- readme-test: curl-session -->"

// readmeURL is the address the README's commands use (make run's); the
// test runs them against a gateway of its own on a free port.
const readmeURL = "http://127.0.0.1:8080"

// TestReadmeCurlSession runs the README's curl session as written, with
// bash, against the gateway binary started as make run starts it
// (embedded authorization server, Docker provider), and checks what a
// user would see: the command's output from inside a sandbox, and the
// sandbox gone after the DELETE.
func TestReadmeCurlSession(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireImage(t, "sandgate/base:latest")
	for _, tool := range []string{"bash", "curl", "awk", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if sandboxtest.Required() {
				t.Fatalf("the README's block needs %s: %v", tool, err)
			}
			t.Skipf("the README's block needs %s: %v", tool, err)
		}
	}
	script := readmeBlock(t, "../README.md", readmeMarker)

	// A short directory: sandbox sockets live under its var/, and a unix
	// socket's path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "sgdoc")
	if err != nil {
		t.Fatal(err)
	}
	instance := "doc" + randomHex(5)
	t.Cleanup(func() { sandboxtest.RemoveDockerInstance(t, instance, dir) })
	gateway := filepath.Join(dir, "bin", "gateway")
	build := exec.Command("go", "build", "-o", gateway, "./cmd/gateway")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gateway: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	startGateway(t, gateway, dir, addr, "--var", filepath.Join(dir, "var"), "--instance", instance,
		"--runner", sandboxtest.RunnerBinary(t), "--metrics-addr", "127.0.0.1:0", "--pool-size", "0")

	// The block runs where make run runs the gateway: bin/gateway and
	// var/ relative to the working directory.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\n"+strings.ReplaceAll(script, readmeURL, "http://"+addr))
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's curl session failed: %v\n%s", err, out)
	}
	for _, want := range []string{"Linux", "uid=1000", `\"exit_code\":0`} {
		if !strings.Contains(string(out), want) && !strings.Contains(string(out), strings.ReplaceAll(want, `\"`, `"`)) {
			t.Errorf("the README's curl session printed no %s:\n%s", want, out)
		}
	}
	// "removes the container": the DELETE ends the session and its sandbox.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := sandboxtest.DockerCLI(t, "ps", "-aq", "--filter", "label=sandgate.instance="+instance)
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers of the session still there 20 s after its DELETE: %s", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readmeBlock returns the fenced code block that follows marker in file.
func readmeBlock(t *testing.T, file, marker string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var block []string
	state := 0 // 0: before the marker, 1: before the fence, 2: inside
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(line) == marker:
			state = 1
		case state == 1 && strings.HasPrefix(line, "```"):
			state = 2
		case state == 2 && strings.HasPrefix(line, "```"):
			return strings.Join(block, "\n") + "\n"
		case state == 2:
			block = append(block, line)
		}
	}
	t.Fatalf("%s: no fenced block after %q", file, marker)
	return ""
}

// startGateway starts the gateway binary on addr, in dir, and waits until /healthz
// answers; the gateway is stopped when the test ends.
func startGateway(t *testing.T, bin, dir, addr string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--addr", addr}, args...)...)
	logs, err := os.Create(filepath.Join(t.TempDir(), "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// Registered after the directory's cleanup, so it runs first: the
	// gateway stops before its containers and var/ are removed.
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
		}
	})
	healthz := "http://" + addr + "/healthz"
	for deadline := time.Now().Add(time.Minute); ; {
		select {
		case <-exited:
			log, _ := os.ReadFile(logs.Name())
			t.Fatalf("gateway exited before serving:\n%s", log)
		default:
		}
		if resp, err := http.Get(healthz); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logs.Name())
			t.Fatalf("gateway not serving after a minute:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
