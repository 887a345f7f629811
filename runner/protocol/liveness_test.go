package protocol_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// resettingListener resets the first n connections it takes, as a runner
// just started has been seen to: it reads one byte of the upgrade
// request and closes, so the rest is unread and the dialler's read fails
// with ECONNRESET. It counts every connection.
type resettingListener struct {
	net.Listener
	n     int
	taken atomic.Int32
}

func (l *resettingListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if int(l.taken.Add(1)) > l.n {
			return conn, nil
		}
		_, _ = conn.Read(make([]byte, 1))
		conn.Close()
	}
}

// TestDialRetriesAReset: a runner that resets its first connections
// before answering is dialled again, up to twice more; one that keeps
// resetting fails Dial with the reset, after three connections.
func TestDialRetriesAReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resets, wantConns int
		ok                bool
	}{{resets: 2, wantConns: 3, ok: true}, {resets: 1000, wantConns: 3}} {
		inner, err := net.Listen("unix", filepath.Join(t.TempDir(), "r.sock"))
		if err != nil {
			t.Fatal(err)
		}
		ln := &resettingListener{Listener: inner, n: tc.resets}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer conn.CloseNow()
			<-r.Context().Done()
		})}
		go srv.Serve(ln)
		c, err := protocol.Dial(t.Context(), func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", inner.Addr().String())
		})
		switch {
		case tc.ok && err != nil:
			t.Errorf("%d resets: Dial: %v, want a connection", tc.resets, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "connection reset")):
			t.Errorf("a runner that always resets: Dial: %v, want the reset", err)
		}
		if c != nil {
			c.Close()
		}
		if got := int(ln.taken.Load()); got != tc.wantConns {
			t.Errorf("%d resets: %d connections, want %d", tc.resets, got, tc.wantConns)
		}
		srv.Close()
	}
}
