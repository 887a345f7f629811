package protocol_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// frozenRunner accepts the websocket and then never reads from it, as a
// runner stopped by SIGSTOP after the connection was made: no request is
// answered, and neither is a ping.
func frozenRunner(t *testing.T) protocol.DialFunc {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
}

// TestHeartbeatFailsAFrozenRunner: a call in flight on a runner that
// stops answering ends with CodeUnresponsive instead of waiting for its
// own deadline, and so does the connection.
func TestHeartbeatFailsAFrozenRunner(t *testing.T) {
	t.Parallel()
	c, err := protocol.Dial(t.Context(), frozenRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The call's own context is far longer than the heartbeat's bound.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	err = c.Call(ctx, protocol.OpFileStat, protocol.PathRequest{Path: "/"}, nil)
	if protocol.CodeOf(err) != protocol.CodeUnresponsive {
		t.Fatalf("call on a frozen runner: %v, want CodeUnresponsive", err)
	}
	if protocol.CodeOf(c.Err()) != protocol.CodeUnresponsive {
		t.Fatalf("connection error %v, want CodeUnresponsive", c.Err())
	}
}

// TestDialFailsASilentRunner: a socket that takes the connection but
// never answers the upgrade (a runner stopped before it) fails Dial with
// CodeUnresponsive, whatever the caller's deadline.
func TestDialFailsASilentRunner(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "silent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never read
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	_, err = protocol.Dial(ctx, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", ln.Addr().String())
	})
	if protocol.CodeOf(err) != protocol.CodeUnresponsive {
		t.Fatalf("Dial of a silent runner: %v, want CodeUnresponsive", err)
	}
}

// TestStoppedRunnerProcess runs the real runner binary, stops it with
// SIGSTOP as sandbox code can, and checks that a call fails with
// CodeUnresponsive; after SIGCONT a new connection works again.
func TestStoppedRunnerProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the runner binary; skipped in -short mode")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "runner.sock")
	cmd := exec.Command(sandboxtest.RunnerBinary(t), "--socket", sock, "--workspace", dir)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	var c *protocol.Client
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if _, serr := os.Stat(sock); serr == nil {
			if c, err = protocol.Dial(t.Context(), dial); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner did not serve within a minute: %v", err)
		}
	}
	defer c.Close()
	if err := c.Call(t.Context(), protocol.OpInfo, nil, nil); err != nil {
		t.Fatalf("info before SIGSTOP: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// On a busy machine the stop takes effect thread by thread.
	if err := sandboxtest.WaitStopped(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	err := c.Call(t.Context(), protocol.OpInfo, nil, nil)
	if protocol.CodeOf(err) != protocol.CodeUnresponsive {
		t.Fatalf("info on a stopped runner: %v, want CodeUnresponsive", err)
	}
	if _, err := protocol.Dial(t.Context(), dial); protocol.CodeOf(err) != protocol.CodeUnresponsive {
		t.Fatalf("Dial of a stopped runner: %v, want CodeUnresponsive", err)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	again, err := protocol.Dial(t.Context(), dial)
	if err != nil {
		t.Fatalf("Dial after SIGCONT: %v", err)
	}
	defer again.Close()
	if err := again.Call(t.Context(), protocol.OpInfo, nil, nil); err != nil {
		t.Fatalf("info after SIGCONT: %v", err)
	}
}
