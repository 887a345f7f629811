package process_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestRunOOM runs calls into a real memory limit of at most 1 GiB: the
// test's own when it runs in a limited container, as the runner does;
// otherwise a new cgroup v1 memory group limited to 256 MiB that the test
// process moves itself into, which needs root and a writable v1 memory
// hierarchy. Elsewhere it is skipped.
func TestRunOOM(t *testing.T) {
	acct, err := cgroup.Open()
	if !limited(acct.Snapshot()) || err != nil {
		limitTestMemory(t)
		acct, err = cgroup.Open()
		must(t, err)
		if !limited(acct.Snapshot()) {
			t.Fatalf("snapshot in the limited group = %+v", acct.Snapshot())
		}
	}
	want := "killed: out of memory (limit " + process.FormatBytes(acct.Snapshot().MemoryLimit) + ")"
	m := process.NewManager(process.Options{Workspace: t.TempDir(), Accounting: acct})
	defer m.Close()
	const hog = `python3 -c 'b = b"x" * (2 << 30)'`
	tests := []struct {
		name, cmd string
		wantOOM   bool
	}{
		{"fits", `python3 -c 'b = b"x" * (64 << 20)'`, false},
		{"root killed", hog, true},
		{"shell reports the kill", hog + "; exit $?", true},
		// The kill is invisible when a later command decides the status.
		{"masked by a later command", hog + "; echo after", false},
	}
	for _, tt := range tests {
		var r recorder
		res, err := m.Run(t.Context(), protocol.ExecRequest{Command: tt.cmd}, r.emit)
		must(t, err)
		if res.OOMKilled != tt.wantOOM {
			t.Errorf("%s: OOMKilled = %v, want %v (%+v)", tt.name, res.OOMKilled, tt.wantOOM, res)
		}
		if tt.wantOOM && res.Message != want {
			t.Errorf("%s: message %q, want %q", tt.name, res.Message, want)
		}
	}
}

// limited reports whether s shows a memory limit small enough for the
// test and an OOM kill counter.
func limited(s cgroup.Snapshot) bool {
	return s.MemoryLimit > 0 && s.MemoryLimit <= 1<<30 && s.HasOOMKills
}

// limitTestMemory moves the test process into a new v1 memory group
// limited to 256 MiB (memory and swap), and back when the test ends.
func limitTestMemory(t *testing.T) {
	mem, err := ownMemoryGroup()
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("not in a memory-limited container, and cannot make a limited group (needs root and cgroup v1): %v", err)
	}
	dir := filepath.Join(mem, fmt.Sprintf("sandgate-oom-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		must(t, writeFile(filepath.Join(mem, "cgroup.procs"), os.Getpid()))
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	must(t, writeFile(filepath.Join(dir, "memory.limit_in_bytes"), 256<<20))
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		must(t, writeFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), 256<<20))
	}
	must(t, writeFile(filepath.Join(dir, "cgroup.procs"), os.Getpid()))
}

// ownMemoryGroup returns the directory of the test process's v1 memory
// cgroup.
func ownMemoryGroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			dir := filepath.Join("/sys/fs/cgroup/memory", parts[2])
			if _, err := os.Stat(filepath.Join(dir, "memory.oom_control")); err != nil {
				return "", err
			}
			return dir, nil
		}
	}
	return "", errors.New("no v1 memory controller")
}

func writeFile(path string, v int) error {
	return os.WriteFile(path, []byte(fmt.Sprint(v)), 0)
}
