package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// reapTimeout bounds the wait for an orphan's zombie to be reaped. An
// orphan no call claims is reaped after runner/process's grace (10 s),
// at the next sweep of the reaper (every 5 s).
const reapTimeout = 40 * time.Second

// TestPID1 runs the runner as PID 1 of a new PID namespace, as in a
// Kubernetes pod, where no init runs before it (under Docker, Docker's
// --init does). Every orphan in the namespace then comes to the runner,
// not only those of its calls: the orphans of a call and of a process that
// entered the namespace from outside (kubectl exec) must both be reaped,
// not left as zombies. And SIGTERM, which the kernel delivers to a
// namespace's init only if it handles it, must still stop the runner.
func TestPID1(t *testing.T) {
	t.Parallel()
	requirePIDNamespace(t)
	sock := filepath.Join(t.TempDir(), "runner.sock")
	r := startRunner(t, []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--"}, "--socket", sock)
	if r.pid != 1 {
		t.Fatalf("the runner says it serves as pid %d, want 1", r.pid)
	}
	c, err := protocol.Dial(t.Context(), func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	})
	if err != nil {
		t.Fatalf("dial %s: %v\n%s", sock, err, r.stderr())
	}
	defer c.Close()
	var info protocol.Info
	if err := c.Call(t.Context(), protocol.OpInfo, nil, &info); err != nil || info.Pid != 1 {
		t.Fatalf("info: pid %d, %v; want pid 1", info.Pid, err)
	}

	// Each orphan is a copy of sleep under a name of its own, which is
	// what /proc shows as its command; it lives long enough to be seen
	// re-parented to the runner.
	tests := []struct {
		name  string
		start func(orphan string) error
	}{
		{"of a call", func(orphan string) error {
			// The call outlives the orphan, so its tree claims the zombie.
			return c.Call(t.Context(), protocol.OpProcessStart, protocol.ExecRequest{Command: "(" + orphan + " 1 &); exec sleep 60"}, nil)
		}},
		{"of a process from outside", func(orphan string) error {
			out, err := exec.Command("nsenter", "--target", strconv.Itoa(r.hostPid), "--pid", "--mount", "--",
				"sh", "-c", orphan+" 1 &").CombinedOutput()
			if err != nil {
				return fmt.Errorf("nsenter: %v: %s", err, out)
			}
			return nil
		}},
	}
	for i, tt := range tests {
		orphan := copySleep(t, fmt.Sprintf("sgorphan%d", i))
		if err := tt.start(orphan); err != nil {
			t.Fatalf("%s: start the orphan: %v", tt.name, err)
		}
		name := filepath.Base(orphan)
		waitProcs(t, name, 10*time.Second, func(ps []procInfo) bool { return len(ps) == 1 && ps[0].ppid == r.hostPid },
			"%s: orphan %s never became the runner's child", tt.name, name)
		waitProcs(t, name, reapTimeout, func(ps []procInfo) bool { return len(ps) == 0 },
			"%s: orphan %s not reaped", tt.name, name)
	}

	if err := syscall.Kill(r.hostPid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the runner did not stop on SIGTERM as pid 1\n%s", r.stderr())
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the runner exited with %d after SIGTERM, want 0\n%s", code, r.stderr())
	}
}

// requirePIDNamespace skips t unless this host lets the test make PID
// namespaces (root, util-linux's unshare and nsenter).
func requirePIDNamespace(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs util-linux's %s: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a PID namespace here (needs root): %v: %s", err, bytes.TrimSpace(out))
	}
}

// copySleep copies sleep into a temporary directory as name and returns
// its path.
func copySleep(t *testing.T, name string) string {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dest, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dest
}

// procInfo is a process as /proc/<pid>/stat shows it.
type procInfo struct {
	pid, ppid int
	state     string
}

// procsNamed lists the processes, zombies included, whose command is name.
func procsNamed(name string) []procInfo {
	ents, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 || !bytes.HasSuffix(b[:i], []byte("("+name)) {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		p := procInfo{pid: pid, state: f[0]}
		p.ppid, _ = strconv.Atoi(f[1])
		out = append(out, p)
	}
	return out
}

// waitProcs polls the processes named name until ok holds, and fails t
// with the message and what it saw last if it does not within timeout.
func waitProcs(t *testing.T, name string, timeout time.Duration, ok func([]procInfo) bool, format string, args ...any) {
	t.Helper()
	start := time.Now()
	for {
		ps := procsNamed(name)
		if ok(ps) {
			t.Logf("%s: %v after %v", name, ps, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > timeout {
			t.Fatalf(format+" within %v; last seen: %+v", append(args, timeout, ps)...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
