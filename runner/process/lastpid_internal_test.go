package process

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

const lastPidHelperEnv = "SANDGATE_TEST_LAST_PID_NAMESPACE"

// TestLastPidShortcuts checks the two places where the pid namespace's
// last pid spares the runner a scan of /proc. The sweep: a root that
// started nothing is known to be alone, and one that started anything is
// never taken for alone. The reaper (registry.quiet) may skip its scan on
// a SIGCHLD after a root that started nothing, not while a process that
// is not a root lives (one a root forked, or one another part of the
// runner started), and whenever it would skip, /proc holds nothing but
// pid 1, the runner and live roots. Both need a pid namespace of their
// own, as a sandbox's runner has (in the host's, every other process
// gives out pids too), so it runs in a copy of the test binary as pid 1
// of a new one.
func TestLastPidShortcuts(t *testing.T) {
	if os.Getenv(lastPidHelperEnv) != "" {
		lastPidHelper(t)
		return
	}
	t.Parallel()
	if _, err := os.Stat("/proc/sys/kernel/ns_last_pid"); err != nil {
		t.Skipf("this kernel does not say its last pid: %v", err)
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a pid namespace here (needs root and util-linux's unshare): %v: %s", err, bytes.TrimSpace(out))
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--",
		os.Args[0], "-test.run=^TestLastPidShortcuts$", "-test.v")
	cmd.Env = append(os.Environ(), lastPidHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestLastPidShortcuts")) {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

// The Go runtime gives out pids too when it makes a thread; a few tries
// get past that.
const lastPidTries = 50

func lastPidHelper(t *testing.T) {
	if os.Getpid() != 1 {
		t.Fatalf("the helper runs as pid %d, want 1 of a new pid namespace", os.Getpid())
	}
	m := NewManager(Options{Workspace: t.TempDir()})
	defer m.Close()
	sweepShortcut(t, m)
	reaperShortcut(t, m)
}

// sweepShortcut checks tree.alone.
func sweepShortcut(t *testing.T, m *Manager) {
	// spawnAlone starts req, waits for its root to exit and reports
	// whether the sweep would find the tree alone, then ends the call as
	// Run does.
	spawnAlone := func(req protocol.ExecRequest) bool {
		t.Helper()
		c, err := m.prepare(req)
		if err != nil {
			t.Fatal(err)
		}
		p, err := spawn(c, false)
		if err != nil {
			t.Fatal(err)
		}
		defer p.closeAll()
		if err := waitExit(p.pid); err != nil {
			t.Fatal(err)
		}
		alone := p.t.alone()
		m.finish(p, exited)
		return alone
	}
	for range 5 {
		if spawnAlone(protocol.ExecRequest{Command: "/bin/true; :"}) {
			t.Fatal("a root that forked /bin/true was taken for alone")
		}
	}
	for range lastPidTries {
		if spawnAlone(protocol.ExecRequest{Argv: []string{"/bin/true"}}) {
			return
		}
	}
	t.Fatalf("a root that started nothing was not found alone in %d tries", lastPidTries)
}

// reaperShortcut checks registry.quiet.
func reaperShortcut(t *testing.T, m *Manager) {
	run := func(req protocol.ExecRequest) {
		t.Helper()
		if _, err := m.Run(t.Context(), req, func(protocol.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	// quietNow scans as the reaper does, then reports quiet, checking that
	// a quiet namespace holds nothing a scan would find.
	quietNow := func(scan bool) bool {
		t.Helper()
		if scan {
			reg.reapOrphans(time.Now())
		}
		quiet := reg.quiet()
		// Nothing in this process starts processes meanwhile.
		if procs := scanProcs(); quiet && len(procs) > 0 {
			t.Fatalf("quiet, but /proc holds %+v", procs)
		}
		return quiet
	}
	alone := false
	for range lastPidTries {
		quietNow(true)
		run(protocol.ExecRequest{Argv: []string{"/bin/true"}})
		if alone = quietNow(false); alone {
			break
		}
	}
	if !alone {
		t.Fatalf("a root that started nothing left the namespace not quiet in %d tries", lastPidTries)
	}
	// While a process that is not a root lives, never: one another part
	// of the runner started, or one a root forked.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	notQuiet := func(what string) {
		t.Helper()
		run(protocol.ExecRequest{Argv: []string{"/bin/true"}})
		if quietNow(false) || quietNow(true) {
			t.Fatalf("quiet while %s lives", what)
		}
	}
	notQuiet("a process started outside the registry")
	other.Process.Kill()
	other.Wait()
	bg, err := m.Start(protocol.ExecRequest{Command: "sleep 60; :"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(scanProcs()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background root did not start sleep")
		}
	}
	notQuiet("a process a root forked")
	if _, err := m.Signal(protocol.ProcessSignalRequest{ID: bg.ID, Signal: "SIGKILL"}); err != nil {
		t.Fatal(err)
	}
}
