package gateway_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
)

// TestDisruptiveDockerdRestart restarts the Docker engine under live
// sessions. It breaks every other test using Docker at the time, so it
// runs only with SANDGATE_DISRUPTIVE=1, as its own step of make test.
// dockerd runs without live-restore, so the sessions' containers die:
// calls during and after the restart fail with an error that says so, a
// new session works, and nothing hangs or leaks goroutines. A sandbox
// paused before the restart is still paused after it, with its files.
func TestDisruptiveDockerdRestart(t *testing.T) {
	if os.Getenv("SANDGATE_DISRUPTIVE") != "1" {
		t.Skip("restarts dockerd, disrupting every other Docker test: set SANDGATE_DISRUPTIVE=1 (make test runs it as its own step)")
	}
	if os.Geteuid() != 0 {
		t.Skip("restarting dockerd needs root")
	}
	// Whatever happens, leave the machine with a running engine.
	t.Cleanup(func() {
		if !dockerAnswers() {
			startDockerd(t)
		}
	})
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
	// A paused sandbox is a stopped container: the restart leaves it so,
	// with its files, and the next call resumes it.
	mc := modernClient(t, tg.URL)
	paused := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, mc, "sandbox_create", nil)))["sandbox_id"].(string)
	mustOK(t, "write_file", call(t, mc, "write_file", map[string]any{"sandbox_id": paused, "path": "kept.txt", "content": "kept"}))
	mustOK(t, "sandbox_pause", call(t, mc, "sandbox_pause", map[string]any{"sandbox_id": paused}))
	goroutines := runtime.NumGoroutine()

	// Calls keep coming while the engine restarts; each must end, well
	// before the call timeout, with a result or an error that says what
	// broke.
	const callLimit = 45 * time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var problems []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), callLimit)
			res, err := callErr(ctx, c, "run_shell", map[string]any{"command": "echo during"})
			cancel()
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				problems = append(problems, "a call hung for "+callLimit.String())
			case err != nil:
				// The session may be gone once its sandbox died; a
				// protocol error is a clear enough answer then.
			case res.IsError && strings.TrimSpace(text(res)) == "":
				problems = append(problems, "an isError result without a message")
			}
		}
	}()
	restartDockerd(t)
	close(stop)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}

	ctx, cancel := context.WithTimeout(t.Context(), callLimit)
	defer cancel()
	res, err := callErr(ctx, c, "run_shell", map[string]any{"command": "echo after"})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		t.Fatal("the first call after the engine restarted hung")
	case err != nil:
		t.Logf("old session after the restart: protocol error %v", err)
	default:
		t.Logf("old session after the restart: isError=%v %q", res.IsError, text(res))
		// A call made while the engine came back may already have
		// replaced the dead sandbox (and said so then); the audit log
		// shows it either way.
		if !res.IsError && !replacedEarlier(t, tg, c.GetSessionId()) {
			checkGoneOrReplaced(t, res)
		} else if res.IsError {
			checkGoneOrReplaced(t, res)
		}
	}

	res = mustOK(t, "read_file of the paused sandbox", call(t, mc, "read_file", map[string]any{"sandbox_id": paused, "path": "kept.txt"}))
	if text(res) != "kept" || !strings.Contains(allText(res), "was paused") {
		t.Errorf("the sandbox paused across the engine restart: %q; want its file and the resume note", allText(res))
	}
	mustOK(t, "sandbox_destroy", call(t, mc, "sandbox_destroy", map[string]any{"sandbox_id": paused}))

	c2 := legacyClient(t, tg.URL)
	r, _ := shell(t, c2, "echo new", nil)
	if strings.TrimSpace(r.Stdout) != "new" {
		t.Fatalf("a new session after the engine restarted: %+v", r)
	}
	c.Close()
	c2.Close()
	waitFor(t, time.Minute, "containers removed after the sessions ended", func() bool { return len(tg.containers(t)) == 0 })
	waitFor(t, 30*time.Second, "goroutines back to their level before the restart", func() bool {
		return runtime.NumGoroutine() <= goroutines+10
	})
}

// restartDockerd stops the engine by the pid in its pid file, waits for
// it to exit, and starts it again as deploy/setup-host.sh does.
func restartDockerd(t *testing.T) {
	t.Helper()
	if exec.Command("systemctl", "is-system-running").Run() == nil {
		if out, err := exec.Command("systemctl", "restart", "docker").CombinedOutput(); err != nil {
			t.Fatalf("systemctl restart docker: %v %s", err, out)
		}
		waitFor(t, time.Minute, "docker info after the restart", dockerAnswers)
		return
	}
	b, err := os.ReadFile("/var/run/docker.pid")
	if err != nil {
		t.Fatalf("find dockerd: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("dockerd pid file: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stop dockerd %d: %v", pid, err)
	}
	waitFor(t, time.Minute, "dockerd to exit", func() bool { return syscall.Kill(pid, 0) != nil })
	startDockerd(t)
}

// startDockerd starts dockerd in its own session, logging where
// deploy/setup-host.sh has it log, and waits until it answers.
func startDockerd(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile("/var/log/sandgate-dockerd.log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("dockerd")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	cmd.Process.Release() // it outlives the test
	waitFor(t, time.Minute, "docker info after starting dockerd", dockerAnswers)
}

func dockerAnswers() bool { return exec.Command("docker", "info").Run() == nil }

// replacedEarlier reports whether the audit log records the session's
// sandbox as replaced because its runner died.
func replacedEarlier(t *testing.T, tg *testGateway, session string) bool {
	for _, e := range auditRecords(t, tg.AuditPath) {
		if e.Kind == audit.KindSandboxReplace && e.Session == session {
			return true
		}
	}
	return false
}
