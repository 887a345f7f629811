package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// serveTimeout bounds the wait for a runner's "runner serving" line.
const serveTimeout = 30 * time.Second

// runnerProc is the real runner binary, started by a test.
type runnerProc struct {
	cmd *exec.Cmd
	// network, addr and pid are what its "runner serving" line says:
	// where it serves (the real port when asked for port 0) and its pid
	// as it sees itself.
	network, addr string
	pid           int
	// hostPid is its pid in the test's PID namespace.
	hostPid int
	done    chan struct{} // closed when cmd has exited

	mu  sync.Mutex
	log bytes.Buffer // its stderr
}

// servingLine is the runner's log line that says it serves.
type servingLine struct {
	Msg     string `json:"msg"`
	Network string `json:"network"`
	Addr    string `json:"addr"`
	Pid     int    `json:"pid"`
}

// startRunner starts the runner binary with args, behind wrap (a command
// such as unshare that runs the runner as its only child) when given, and
// returns once it serves. A workspace, a TMPDIR and a free port for the
// egress proxy are added to args. The runner gets SIGTERM, then SIGKILL,
// when t ends.
func startRunner(t *testing.T, wrap []string, args ...string) *runnerProc {
	t.Helper()
	dir := t.TempDir()
	ws, tmp := filepath.Join(dir, "workspace"), filepath.Join(dir, "tmp")
	for _, d := range []string{ws, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	argv := append(append(wrap, sandboxtest.RunnerBinary(t), "--workspace", ws, "--proxy-listen", "127.0.0.1:0"), args...)
	r := &runnerProc{cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	r.cmd.Dir = ws
	// Nothing from the test's environment, as nothing from the host's
	// enters a real sandbox.
	r.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8", "TMPDIR=" + tmp}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	serving := make(chan servingLine, 1)
	go r.readLog(stderr, serving)
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(r.stop)
	select {
	case line := <-serving:
		r.network, r.addr, r.pid = line.Network, line.Addr, line.Pid
	case <-r.done:
		t.Fatalf("runner exited before serving: %v\n%s", r.cmd.ProcessState, r.stderr())
	case <-time.After(serveTimeout):
		t.Fatalf("runner did not serve within %v\n%s", serveTimeout, r.stderr())
	}
	r.hostPid = r.cmd.Process.Pid
	if wrap != nil {
		if r.hostPid, err = onlyChild(r.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// readLog keeps the runner's stderr and sends its serving line.
func (r *runnerProc) readLog(stderr io.Reader, serving chan<- servingLine) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		r.mu.Lock()
		r.log.Write(sc.Bytes())
		r.log.WriteByte('\n')
		r.mu.Unlock()
		var line servingLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "runner serving" {
			select {
			case serving <- line:
			default: // only the first counts
			}
		}
	}
}

func (r *runnerProc) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// stop ends the runner: SIGTERM, and SIGKILL to what the test started
// (which, behind unshare --kill-child, kills the runner too) if it has
// not exited after 10 s or was never found.
func (r *runnerProc) stop() {
	if r.hostPid == 0 {
		_ = r.cmd.Process.Kill()
	} else {
		_ = syscall.Kill(r.hostPid, syscall.SIGTERM)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// onlyChild returns the pid of the one child of pid.
func onlyChild(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, fmt.Errorf("read the children of %d: %w", pid, err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		return 0, fmt.Errorf("process %d has children %v, want one", pid, f)
	}
	return strconv.Atoi(f[0])
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
