package process

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

const quietHelperEnv = "SANDGATE_TEST_QUIET_NAMESPACE"

// TestReaperQuiet checks when the reaper may skip its scan of /proc on a
// SIGCHLD (registry.quiet): after a root that started nothing, yes; after
// a root that forked, or a process started by anything else in the
// runner, no; and whenever it says yes, /proc holds nothing but pid 1,
// the runner and live roots. It needs a pid namespace of its own, as a
// sandbox's runner has, so it runs in a copy of the test binary as pid 1
// of a new one.
func TestReaperQuiet(t *testing.T) {
	if os.Getenv(quietHelperEnv) != "" {
		quietHelper(t)
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
		os.Args[0], "-test.run=^TestReaperQuiet$", "-test.v")
	cmd.Env = append(os.Environ(), quietHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestReaperQuiet")) {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

func quietHelper(t *testing.T) {
	if os.Getpid() != 1 {
		t.Fatalf("the helper runs as pid %d, want 1 of a new pid namespace", os.Getpid())
	}
	m := NewManager(Options{Workspace: t.TempDir()})
	defer m.Close()
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
	// The Go runtime gives out pids too when it makes a thread; a few
	// tries get past that.
	const tries = 50
	alone := false
	for range tries {
		quietNow(true)
		run(protocol.ExecRequest{Argv: []string{"/bin/true"}})
		if alone = quietNow(false); alone {
			break
		}
	}
	if !alone {
		t.Fatalf("a root that started nothing left the namespace not quiet in %d tries", tries)
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
