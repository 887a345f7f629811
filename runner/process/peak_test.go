package process_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// peakHelperEnv makes the test binary run peakHelper instead of the tests.
const peakHelperEnv = "SANDGATE_PEAK_HELPER_WORKSPACE"

// TestRunMemoryPeak checks that MemoryPeakBytes is the call's, not the
// runner's: the runner's own past peak (here 256 MiB the helper
// allocated and freed) must not show in a small command's figure. The
// runner's current size remains a floor (see resetPeakRSS), which under
// the race detector is large, so the bounds are relative to it.
//
// It runs in a copy of the test binary as the runner runs in a sandbox:
// as a user other than root and not dumpable, whose own /proc files the
// kernel then gives to root. Run as root and dumpable, it passed while
// every real call's reset failed with EACCES.
func TestRunMemoryPeak(t *testing.T) {
	if ws := os.Getenv(peakHelperEnv); ws != "" {
		peakHelper(t, ws)
		return
	}
	t.Parallel()
	dir, err := os.MkdirTemp("", "peak-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ws := filepath.Join(dir, "workspace")
	if err := os.Mkdir(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	// Mkdir's mode is masked; the other user must enter both.
	for _, d := range []string{dir, ws} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "process.test")
	copyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(bin, "-test.run=^TestRunMemoryPeak$", "-test.v")
	cmd.Env = append(os.Environ(), peakHelperEnv+"="+ws)
	cmd.Dir = ws
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestRunMemoryPeak")) {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

// peakHelper is TestRunMemoryPeak in the runner's conditions.
func peakHelper(t *testing.T, ws string) {
	process.OpenPeakReset() // as cmd/runner does, before:
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0); os.Geteuid() != 0 && err == nil {
		t.Fatal("a non-dumpable process opened its own clear_refs: the helper does not run as the runner would")
	}
	m := process.NewManager(process.Options{Workspace: ws})
	defer m.Close()
	big := bytes.Repeat([]byte{1}, 256<<20)
	big[len(big)-1] = 2
	big = nil
	debug.FreeOSMemory()
	rss := currentRSS(t)
	tests := []struct {
		cmd      string
		min, max int64
	}{
		{"true", 0, rss + 32<<20},
		{"python3 -c 'a = bytearray(160 << 20)'", 160 << 20, max(rss, 160<<20) + 64<<20},
	}
	for _, tt := range tests {
		res, err := m.Run(t.Context(), protocol.ExecRequest{Command: tt.cmd}, func(protocol.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		if res.MemoryPeakBytes < tt.min || res.MemoryPeakBytes > tt.max {
			t.Errorf("%s: MemoryPeakBytes = %d MiB, want %d-%d MiB", tt.cmd, res.MemoryPeakBytes>>20, tt.min>>20, tt.max>>20)
		}
	}
}

// copyExecutable copies the file src to dst, executable by everyone.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// No fork while the copy is open for writing: a child that another
	// test's goroutine forked in that window holds the fd until it execs
	// (O_CLOEXEC closes it only then), and exec of dst then fails with
	// ETXTBSY, "text file busy". syscall.ForkLock is what forkExec takes.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(fmt.Errorf("copy %s: %w", src, err))
	}
}

// currentRSS returns the test process's resident size in bytes.
func currentRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
