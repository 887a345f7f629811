package runner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runner"
	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// startRunner serves a real runner on a unix socket in a temp dir and
// returns a dial function for it.
func startRunner(t *testing.T) (protocol.DialFunc, string) {
	t.Helper()
	return startRunnerWith(t, nil)
}

// startRunnerWith is startRunner with the runner's handler wrapped by
// wrap (when not nil).
func startRunnerWith(t testing.TB, wrap func(http.Handler) http.Handler) (protocol.DialFunc, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pm := process.NewManager(process.Options{Workspace: ws, Logger: log})
	t.Cleanup(pm.Close)
	srv := runner.NewServer(runner.Services{Files: files.New(files.Options{Workspace: ws}), Processes: pm, Info: runner.Describe(ws, nil, pm)}, log)
	sock := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}, ws
}

func dial(t *testing.T, d protocol.DialFunc) *protocol.Client {
	t.Helper()
	c, err := protocol.Dial(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestMultiplexedConcurrentRequests(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	c := dial(t, d)
	// Ten sleeps of 1 s on one connection finish in about 1 s only if the
	// connection really multiplexes them.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out strings.Builder
			raw, err := c.Stream(t.Context(), protocol.OpExec, protocol.ExecRequest{Command: "sleep 1; echo " + string(rune('a'+i))}, func(ev protocol.Event) {
				if ev.Type == protocol.EventStdout {
					out.Write(ev.Data)
				}
			})
			if err == nil && (len(raw) == 0 || out.String() != string(rune('a'+i))+"\n") {
				err = errors.New("wrong output " + out.String())
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("10 concurrent 1 s calls took %v: not multiplexed", took)
	}
}

func TestCancelKillsTheCall(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	c := dial(t, d)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var res protocol.ExecResult
	start := time.Now()
	err := c.Call(ctx, protocol.OpExec, protocol.ExecRequest{Command: "sleep 30"}, &res)
	if err != nil {
		t.Fatalf("cancelled exec should still end with its result, got %v", err)
	}
	if !res.Canceled || time.Since(start) > 5*time.Second {
		t.Fatalf("after cancel: %+v in %v", res, time.Since(start))
	}
}

func TestErrorsKeepTheirCode(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	c := dial(t, d)
	err := c.Call(t.Context(), protocol.OpFileRead, protocol.ReadRequest{Path: "nope.txt"}, nil)
	if protocol.CodeOf(err) != protocol.CodeNotFound {
		t.Fatalf("read missing file: %v (code %s)", err, protocol.CodeOf(err))
	}
	err = c.Call(t.Context(), protocol.Op("frobnicate"), nil, nil)
	if protocol.CodeOf(err) != protocol.CodeUnsupported {
		t.Fatalf("unknown op: %v", err)
	}
	err = c.Call(t.Context(), protocol.OpFileRead, map[string]any{"path": "x", "bogus": 1}, nil)
	if protocol.CodeOf(err) != protocol.CodeInvalid || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown param: %v", err)
	}
	var info protocol.Info
	if err := c.Call(t.Context(), protocol.OpInfo, nil, &info); err != nil || info.Version != protocol.Version {
		t.Fatalf("info: %+v %v", info, err)
	}
}

func TestVersionMismatchIsClear(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d(ctx) }}}
	_, resp, err := websocket.Dial(t.Context(), "ws://runner"+protocol.Path, &websocket.DialOptions{
		HTTPClient: hc, HTTPHeader: http.Header{protocol.VersionHeader: []string{"999"}},
	})
	if err == nil {
		t.Fatal("runner accepted protocol version 999")
	}
	if resp == nil || resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("want 426, got %v", resp)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "runner speaks 1") || !strings.Contains(string(body), "999") {
		t.Fatalf("mismatch message does not name both versions: %q", body)
	}
}

func TestLostConnectionFailsPendingCalls(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	c := dial(t, d)
	done := make(chan error, 1)
	go func() { done <- c.Call(t.Context(), protocol.OpExec, protocol.ExecRequest{Command: "sleep 30"}, nil) }()
	time.Sleep(200 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if protocol.CodeOf(err) != protocol.CodeUnavailable {
			t.Fatalf("pending call after close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending call never ended after the connection closed")
	}
}
