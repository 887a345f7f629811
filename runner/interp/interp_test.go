package interp_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/interp"
	"github.com/sandgate/sandgate/runner/protocol"
)

// newManager returns a Manager running the host's python3 (resolved past
// shims such as pyenv's, which are slow to start), closed when the test
// ends.
func newManager(t *testing.T, opts interp.Options) *interp.Manager {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("no python3 on this host: %v", err)
	}
	opts.Python = strings.TrimSpace(string(out))
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	m, err := interp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// run runs one cell and fails the test on an error.
func run(t *testing.T, m *interp.Manager, code string, timeout time.Duration) protocol.InterpResult {
	t.Helper()
	res, err := m.Run(t.Context(), protocol.InterpRequest{Language: "python", Code: code, TimeoutMs: timeout.Milliseconds()})
	if err != nil {
		t.Fatalf("run %q: %v", code, err)
	}
	return res
}

func TestStateIsKept(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	if res := run(t, m, "x = 41", 0); res.HasResult || res.Error != "" || res.Restarted {
		t.Fatalf("x = 41: %+v", res)
	}
	if res := run(t, m, "x + 1", 0); !res.HasResult || res.Result != "42" {
		t.Fatalf("x + 1: %+v", res)
	}
	run(t, m, "import math\ndef area(r):\n    return math.pi * r * r", 0)
	if res := run(t, m, "round(area(2), 3)", 0); res.Result != "12.566" {
		t.Fatalf("a definition and an import of an earlier cell: %+v", res)
	}
}

func TestCells(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	tests := []struct {
		name, code      string
		stdout, stderr  string
		result          string
		hasResult       bool
		errorName, errs string // errs: a part of the traceback
	}{
		{name: "print and a last expression", code: "print('hi')\n'a' * 3", stdout: "hi\n", result: "'aaa'", hasResult: true},
		{name: "no last expression", code: "y = [1, 2]\nfor i in y:\n    print(i)", stdout: "1\n2\n"},
		{name: "None is no result", code: "None"},
		{name: "a call returning None", code: "print('side effect')", stdout: "side effect\n"},
		{name: "stderr", code: "import sys\nsys.stderr.write('warn\\n')\n7", stderr: "warn\n", result: "7", hasResult: true},
		{name: "exception", code: "def f():\n    return 1 / 0\nf()", errorName: "ZeroDivisionError",
			errs: "File \"<cell 6>\", line 3, in <module>\n    f()\n  File \"<cell 6>\", line 2, in f\n    return 1 / 0"},
		{name: "syntax error", code: "def (:", errorName: "SyntaxError", errs: "<cell 7>"},
		{name: "SystemExit does not end the interpreter", code: "import sys\nsys.exit(3)", errorName: "SystemExit"},
		{name: "output of C code and child processes", code: "import os, subprocess\nprint('py', flush=True)\nos.write(1, b'raw\\n')\nsubprocess.run(['echo', 'child'])\nos.system('echo err >&2')",
			stdout: "py\nraw\nchild\n", stderr: "err\n", result: "0", hasResult: true},
		{name: "the working directory imports", code: "open('mod.py', 'w').write('V = 5\\n')\nimport mod\nmod.V", result: "5", hasResult: true},
		{name: "state survived the errors", code: "y", result: "[1, 2]", hasResult: true},
	}
	for _, tt := range tests { // in order: the cell numbers and the state depend on it
		res := run(t, m, tt.code, 0)
		if res.Stdout != tt.stdout || res.Stderr != tt.stderr || res.Result != tt.result || res.HasResult != tt.hasResult || res.ErrorName != tt.errorName {
			t.Errorf("%s: got %+v", tt.name, res)
		}
		if !strings.Contains(res.Error, tt.errs) || (tt.errorName == "") != (res.Error == "") {
			t.Errorf("%s: traceback %q, want one containing %q", tt.name, res.Error, tt.errs)
		}
		if strings.Contains(res.Error, "driver") || strings.Contains(res.Error, "sandgate-interp") {
			t.Errorf("%s: traceback shows the driver's frames:\n%s", tt.name, res.Error)
		}
	}
}

func TestTimeoutInterruptsAndKeepsState(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	run(t, m, "x = 41", 0)
	start := time.Now()
	res := run(t, m, "n = 0\nwhile True:\n    n += 1", 300*time.Millisecond)
	if !res.TimedOut || res.ErrorName != "KeyboardInterrupt" || res.Restarted || !strings.Contains(res.Message, "kept its state") {
		t.Fatalf("timed-out cell: %+v", res)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("interrupt took %v", took)
	}
	if res := run(t, m, "x + 1, n > 0", 0); res.Result != "(42, True)" {
		t.Fatalf("after the interrupt: %+v", res)
	}
}

func TestIgnoredInterruptRestarts(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, code string }{
		{"SIGINT ignored by the cell", "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(100)"},
		// system() ignores SIGINT while it waits for its child, which is
		// not signalled (the interrupt goes to the interpreter only).
		{"C code waiting with SIGINT ignored", "import os\nos.system('sleep 1234')"},
		{"interrupt swallowed", "import time\nwhile True:\n    try:\n        time.sleep(100)\n    except KeyboardInterrupt:\n        pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t, interp.Options{Grace: 300 * time.Millisecond})
			run(t, m, "x = 41", 0)
			res := run(t, m, tt.code, 300*time.Millisecond)
			if !res.TimedOut || !res.Restarted || !strings.Contains(res.Message, "killed") || !strings.Contains(res.Message, "earlier state is gone") {
				t.Fatalf("stuck cell: %+v", res)
			}
			if res := run(t, m, "x", 0); res.ErrorName != "NameError" || res.Restarted || res.Message != "" {
				t.Fatalf("x after the restart: %+v", res)
			}
		})
	}
}

func TestKilledBetweenCalls(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	run(t, m, "x = 41", 0)
	pid := pidOf(t, m)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	res := run(t, m, "x", 0)
	if !res.Restarted || res.ErrorName != "NameError" || res.Message != "the interpreter died (killed by SIGKILL); a new one was started and earlier state is gone" {
		t.Fatalf("after an outside kill: %+v", res)
	}
	if res := run(t, m, "1", 0); res.Restarted || res.Message != "" {
		t.Fatalf("the death was reported twice: %+v", res)
	}
}

func TestDiesDuringCell(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	run(t, m, "x = 41", 0)
	res := run(t, m, "print('bye', flush=True)\nimport os\nos._exit(3)", 0)
	if res.ErrorName != "InterpreterDied" || !strings.Contains(res.Error, "exited with status 3") || res.Stdout != "bye\n" || res.Restarted {
		t.Fatalf("a cell that ends the interpreter: %+v", res)
	}
	res = run(t, m, "x", 0)
	if !res.Restarted || res.ErrorName != "NameError" || !strings.HasPrefix(res.Message, "the interpreter died (exited with status 3)") {
		t.Fatalf("the next call: %+v", res)
	}
}

func TestRestartClearsState(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	run(t, m, "x = 41", 0)
	old := pidOf(t, m)
	res, err := m.Restart(t.Context(), protocol.InterpRestartRequest{Language: "python"})
	if err != nil || !res.Restarted {
		t.Fatalf("Restart: %+v, %v", res, err)
	}
	waitGone(t, old)
	if res := run(t, m, "x", 0); res.ErrorName != "NameError" || res.Restarted {
		t.Fatalf("x after Restart: %+v", res)
	}
}

func TestCellsAreSerialised(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	run(t, m, "import time\nlog = []", 0)
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := fmt.Sprintf("log.append('%s')\ntime.sleep(0.2)\nlog.append('%s')", name, name)
			if res, err := m.Run(t.Context(), protocol.InterpRequest{Language: "python", Code: code}); err != nil || res.Error != "" {
				t.Errorf("cell %s: %+v %v", name, res, err)
			}
		}()
	}
	wg.Wait()
	res := run(t, m, "''.join(log)", 0)
	got := strings.Trim(res.Result, "'")
	if len(got) != 6 || got[0] != got[1] || got[2] != got[3] || got[4] != got[5] {
		t.Fatalf("cells overlapped: %s", res.Result)
	}

	// A call that cannot get its turn within its timeout does not run.
	started := make(chan struct{})
	go func() {
		close(started)
		m.Run(t.Context(), protocol.InterpRequest{Language: "python", Code: "time.sleep(1)"})
	}()
	<-started
	time.Sleep(100 * time.Millisecond)
	res = run(t, m, "log.append('late')", 200*time.Millisecond)
	if !res.TimedOut || !strings.Contains(res.Message, "did not run") {
		t.Fatalf("a call waiting past its timeout: %+v", res)
	}
	if res := run(t, m, "'late' in log", 0); res.Result != "False" {
		t.Fatalf("the late cell ran: %+v", res)
	}
}

func TestOutputCaps(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	res := run(t, m, "import sys\nsys.stdout.write('o' * (3 << 20))\nsys.stderr.write('e' * ((1 << 20) + 1))\n'r' * 200000", 0)
	if len(res.Stdout) != 1<<20 || len(res.Stderr) != 1<<20 {
		t.Fatalf("kept %d bytes of stdout and %d of stderr; want 1 MiB each", len(res.Stdout), len(res.Stderr))
	}
	for _, want := range []string{"stdout was cut at the 1 MiB cap (3145728 bytes written)", "stderr was cut", "repr was cut"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	if n := len(res.Result); n > 64<<10 || n < 60<<10 || !strings.Contains(res.Result, "characters cut") {
		t.Fatalf("result of %d bytes", n)
	}
	if res := run(t, m, "print('next')", 0); res.Stdout != "next\n" || res.Message != "" {
		t.Fatalf("the next cell carries output of the capped one: %d bytes, %q", len(res.Stdout), res.Message)
	}
}

// TestFigures stands a fake matplotlib.pyplot in (the host may have no
// matplotlib; the end-to-end test draws real ones): the driver saves and
// closes every open figure, within the 8 MiB cap.
func TestFigures(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	fake := `import sys, types
plt = types.ModuleType("matplotlib.pyplot")
open_figs = {}
class Fig:
    def __init__(self, num, size): self.num, self.size = num, size
    def savefig(self, f, format): f.write(b"\x89PNG" + b"x" * self.size)
plt.get_fignums = lambda: sorted(open_figs)
plt.figure = lambda num: open_figs[num]
plt.close = lambda fig: open_figs.pop(fig.num)
sys.modules["matplotlib.pyplot"] = plt
`
	run(t, m, fake, 0)
	res := run(t, m, "open_figs.update({1: Fig(1, 10), 2: Fig(2, 20)})", 0)
	if len(res.Figures) != 2 || string(res.Figures[0]) != "\x89PNG"+strings.Repeat("x", 10) || len(res.Figures[1]) != 24 {
		t.Fatalf("figures: %q", res.Figures)
	}
	if res := run(t, m, "len(open_figs)", 0); res.Result != "0" || len(res.Figures) != 0 {
		t.Fatalf("figures left open: %+v", res)
	}
	res = run(t, m, "open_figs.update({i: Fig(i, 3 << 20) for i in range(4)})", 0)
	if len(res.Figures) != 2 || !strings.Contains(res.Message, "2 figure(s) left out") {
		t.Fatalf("figures over the cap: %d, %q", len(res.Figures), res.Message)
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	_, err := m.Run(t.Context(), protocol.InterpRequest{Language: "node", Code: "1"})
	if protocol.CodeOf(err) != protocol.CodeInvalid || !strings.Contains(err.Error(), "python only") {
		t.Fatalf("node: %v", err)
	}
	_, err = m.Restart(t.Context(), protocol.InterpRestartRequest{Language: "ruby"})
	if protocol.CodeOf(err) != protocol.CodeInvalid {
		t.Fatalf("restart ruby: %v", err)
	}
	if res := run(t, m, "1", 0); res.Result != "1" {
		t.Fatalf("python3 alias: %+v", res)
	}
}

func TestCancelInterrupts(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	run(t, m, "x = 41", 0)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res, err := m.Run(ctx, protocol.InterpRequest{Language: "python", Code: "import time\ntime.sleep(100)"})
	if err != nil || res.ErrorName != "KeyboardInterrupt" || res.TimedOut {
		t.Fatalf("cancelled cell: %+v %v", res, err)
	}
	if res := run(t, m, "x", 0); res.Result != "41" {
		t.Fatalf("after cancel: %+v", res)
	}
}

func TestCloseKills(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	pid := pidOf(t, m)
	done := make(chan protocol.InterpResult)
	go func() {
		res, _ := m.Run(t.Context(), protocol.InterpRequest{Language: "python", Code: "import time\ntime.sleep(100)"})
		done <- res
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	m.Close()
	<-done
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v", took)
	}
	waitGone(t, pid)
	_, err := m.Run(t.Context(), protocol.InterpRequest{Language: "python", Code: "1"})
	if protocol.CodeOf(err) != protocol.CodeUnavailable {
		t.Fatalf("Run after Close: %v", err)
	}
}

func TestNoPython(t *testing.T) {
	t.Parallel()
	_, err := interp.New(interp.Options{Python: "/nonexistent/python3"})
	if !errors.Is(err, interp.ErrNoPython) {
		t.Fatalf("New without python: %v", err)
	}
}

// pidOf returns the interpreter's pid, as the cell sees it.
func pidOf(t *testing.T, m *interp.Manager) int {
	t.Helper()
	res := run(t, m, "import os\nos.getpid()", 0)
	pid, err := strconv.Atoi(res.Result)
	if err != nil {
		t.Fatalf("pid: %+v", res)
	}
	return pid
}

// waitGone waits until pid no longer exists (the Manager reaped it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still exists", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
