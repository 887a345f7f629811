package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// dialSecret dials addr over TCP and sends secret first, as the gateway
// does to a runner on Kubernetes.
func dialSecret(addr string, secret []byte) protocol.DialFunc {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		if err := protocol.WriteSecret(conn, secret); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
}

// answered sends preamble and then an HTTP request to addr, and returns
// how many bytes came back before the runner closed the connection. A
// runner that serves HTTP answers any request with something, if only an
// error status.
func answered(t *testing.T, addr string, preamble []byte) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Past the runner's own deadline for the secret (10 s): it must have
	// closed the connection by then, not merely stayed silent.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := "GET " + protocol.Path + " HTTP/1.1\r\nHost: runner\r\n\r\n"
	if _, err := conn.Write(append(preamble, req...)); err != nil {
		return 0 // closed before it took the whole request: no answer
	}
	got, err := io.ReadAll(conn)
	if os.IsTimeout(err) {
		t.Errorf("the runner neither answered nor closed a connection that sent %d bytes of secret", len(preamble))
	}
	return len(got)
}

// TestServeTCP runs the runner binary with --listen on a port of its
// choosing, learnt from its log, and shows that a connection with the
// sandbox's secret gets the protocol and one without it gets nothing.
func TestServeTCP(t *testing.T) {
	t.Parallel()
	r, secret := startTCPRunner(t)
	if r.network != "tcp" || strings.HasSuffix(r.addr, ":0") {
		t.Fatalf("serving on %s %s, want tcp with the bound port", r.network, r.addr)
	}

	refused := []struct {
		name     string
		preamble []byte
	}{
		{"wrong secret", bytes.Repeat([]byte{0x5b}, protocol.SecretSize)},
		{"short secret", secret[:protocol.SecretSize-1]},
		{"no secret", nil},
	}
	for _, tt := range refused {
		if n := answered(t, r.addr, tt.preamble); n > 0 {
			t.Errorf("%s: the runner answered an HTTP request with %d bytes", tt.name, n)
		}
	}
	if c, err := protocol.Dial(t.Context(), dialSecret(r.addr, bytes.Repeat([]byte{0x5b}, protocol.SecretSize))); err == nil {
		c.Close()
		t.Error("a client with a wrong secret got a runner connection")
	}

	c, err := protocol.Dial(t.Context(), dialSecret(r.addr, secret))
	if err != nil {
		t.Fatalf("dial with the secret: %v\n%s", err, r.stderr())
	}
	defer c.Close()
	var info protocol.Info
	if err := c.Call(t.Context(), protocol.OpInfo, nil, &info); err != nil {
		t.Fatalf("info: %v", err)
	}
	if info.Pid != r.hostPid {
		t.Errorf("info says pid %d, want the runner's %d", info.Pid, r.hostPid)
	}
	if out := execOut(t, c, "echo hello"); out != "hello\n" {
		t.Errorf("echo hello printed %q", out)
	}
	if log := r.stderr(); strings.Contains(strings.ToLower(log), hex.EncodeToString(secret)) {
		t.Errorf("the runner logged its secret:\n%s", log)
	}
}

// TestBadSecretFile shows that a runner whose secret cannot be read does
// not start, and says why without echoing the file.
func TestBadSecretFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          string
	}{
		{"missing", "", "no such file"},
		{"short", strings.Repeat("ab", protocol.SecretSize-1), "must be 64 hex characters"},
		{"not hex", strings.Repeat("zz", protocol.SecretSize), "must be 64 hex characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(dir, tt.name)
			if tt.content != "" {
				writeFile(t, file, tt.content, 0o400)
			}
			out, err := exec.Command(sandboxtest.RunnerBinary(t), "--listen", "127.0.0.1:0", "--secret-file", file).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--secret-file") || !strings.Contains(string(out), tt.want) {
				t.Fatalf("runner with a %s secret file: %v, %q; want a failure that says %q", tt.name, err, out, tt.want)
			}
			if tt.content != "" && strings.Contains(string(out), tt.content) {
				t.Errorf("the error echoes the file's content: %q", out)
			}
		})
	}
}

// startTCPRunner starts the runner binary serving TCP on a port of its
// choosing, with a secret it returns.
func startTCPRunner(t *testing.T) (*runnerProc, []byte) {
	t.Helper()
	secret := bytes.Repeat([]byte{0x5a}, protocol.SecretSize)
	file := filepath.Join(t.TempDir(), "secret")
	writeFile(t, file, hex.EncodeToString(secret)+"\n", 0o400)
	return startRunner(t, nil, "--listen", "127.0.0.1:0", "--secret-file", file), secret
}

// execOut runs command through c and returns its stdout.
func execOut(t *testing.T, c *protocol.Client, command string) string {
	t.Helper()
	var out strings.Builder
	_, err := c.Stream(t.Context(), protocol.OpExec, protocol.ExecRequest{Command: command}, func(ev protocol.Event) {
		if ev.Type == protocol.EventStdout {
			out.Write(ev.Data)
		}
	})
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	return out.String()
}

// TestTimerSlack checks that the runner's threads have runnerTimerSlack,
// set before Go's runtime made them (the runner executes itself again
// for it, under its own name), while the processes it starts get the
// slack the runner was started with and none of the variable that
// carried it.
func TestTimerSlack(t *testing.T) {
	t.Parallel()
	r, secret := startTCPRunner(t)
	if r.pid != r.hostPid {
		t.Fatalf("the runner serves as pid %d, was started as %d: the re-execution must keep its pid", r.pid, r.hostPid)
	}
	// Only the main thread's slack can be read from outside; the
	// runtime's other threads were made after the re-execution, by it or
	// by threads it made, so they have the same.
	got := strings.TrimSpace(readProcFile(t, fmt.Sprintf("/proc/%d/timerslack_ns", r.hostPid)))
	if want := strconv.FormatInt(runnerTimerSlack.Nanoseconds(), 10); got != want {
		t.Errorf("the runner's timer slack is %s ns, want %s", got, want)
	}
	if comm := strings.TrimSpace(readProcFile(t, fmt.Sprintf("/proc/%d/comm", r.hostPid))); comm != filepath.Base(sandboxtest.RunnerBinary(t)) {
		t.Errorf("after re-executing itself the runner is named %q", comm)
	}

	c, err := protocol.Dial(t.Context(), dialSecret(r.addr, secret))
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, r.stderr())
	}
	defer c.Close()
	// The runner was started by one of this test's threads, all of which
	// have the default slack this process was started with.
	want := strings.TrimSpace(readProcFile(t, "/proc/self/timerslack_ns"))
	if got := strings.TrimSpace(execOut(t, c, "cat /proc/self/timerslack_ns")); got != want {
		t.Errorf("a command's timer slack is %s ns, want the %s ns the runner was started with", got, want)
	}
	if got := execOut(t, c, "echo ${"+slackEnv+"-unset}"); got != "unset\n" {
		t.Errorf("a command sees %s=%q", slackEnv, got)
	}
}

// readProcFile reads a /proc file of another process, which takes root
// when the runner is not dumpable.
func readProcFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExecAsUser runs the runner binary as the trampoline Chromium is
// started through: the program it executes runs at process.UserNice and
// with the timer slack it was given, under its own name, without the
// variables that asked for it.
func TestExecAsUser(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(sandboxtest.RunnerBinary(t), "-c",
		`cut -d' ' -f19 /proc/self/stat; cat /proc/self/timerslack_ns; echo "${`+process.AsUserEnv+`-unset} $0"`)
	process.SetUserTimerSlack(123456 * time.Nanosecond) // nothing in this test binary starts user code
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, process.AsUserEnviron("/bin/sh")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := fmt.Sprintf("%d\n123456\nunset /bin/sh\n", process.UserNice); string(out) != want {
		t.Errorf("the trampoline's program printed %q, want %q", out, want)
	}
}
