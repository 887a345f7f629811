package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestRunStreams checks that output is sent as it is produced, not when
// the process ends.
func TestRunStreams(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	var r recorder
	res, err := m.Run(t.Context(), protocol.ExecRequest{Command: "echo a; sleep 1; echo b >&2; echo c"}, r.emit)
	end := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if res.Pid <= 0 {
		t.Errorf("result names pid %d, want the root's", res.Pid)
	}
	if r.events[0].Type != protocol.EventStdout || string(r.events[0].Data) != "a\n" {
		t.Fatalf("first event = %+v, want stdout a", r.events[0])
	}
	if gap := end.Sub(r.times[0]); gap < 800*time.Millisecond {
		t.Errorf("first chunk arrived %v before the end, want it about 1s before", gap)
	}
	if got := r.stream(protocol.EventStdout); got != "a\nc\n" {
		t.Errorf("stdout = %q", got)
	}
	if got := r.stream(protocol.EventStderr); got != "b\n" {
		t.Errorf("stderr = %q", got)
	}
	if res.ExitCode != 0 || res.StdoutBytes != 4 || res.StderrBytes != 2 || res.DurationMs < 1000 {
		t.Errorf("result = %+v", res)
	}
}

func TestRunResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		req        protocol.ExecRequest
		wantCode   int
		wantSignal string
		wantOut    string
	}{
		{"exit 0", protocol.ExecRequest{Command: "true"}, 0, "", ""},
		{"exit 3", protocol.ExecRequest{Command: "exit 3"}, 3, "", ""},
		{"sigterm", protocol.ExecRequest{Command: "kill -TERM $$"}, -1, "SIGTERM", ""},
		{"sigkill", protocol.ExecRequest{Command: "kill -KILL $$"}, -1, "SIGKILL", ""},
		{"argv in PATH", protocol.ExecRequest{Argv: []string{"echo", "x y", "z"}}, 0, "", "x y z\n"},
		{"argv path", protocol.ExecRequest{Argv: []string{"/bin/sh", "-c", "exit 5"}}, 5, "", ""},
		{"stdin", protocol.ExecRequest{Command: "cat; echo", Stdin: []byte("hello")}, 0, "", "hello\n"},
		{"stdin large", protocol.ExecRequest{Command: "wc -c", Stdin: make([]byte, 1<<20)}, 0, "", "1048576\n"},
		{"no stdin is /dev/null", protocol.ExecRequest{Command: "wc -c"}, 0, "", "0\n"},
		{"stdin unread", protocol.ExecRequest{Command: "exit 0", Stdin: make([]byte, 1<<20)}, 0, "", ""},
		{"env", protocol.ExecRequest{Command: `echo "$FOO-$LANG"`, Env: map[string]string{"FOO": "bar"}}, 0, "", "bar-C.UTF-8\n"},
		{"env overrides base", protocol.ExecRequest{Command: `echo "$LANG"`, Env: map[string]string{"LANG": "C"}}, 0, "", "C\n"},
		{"marker not forgeable", protocol.ExecRequest{Command: `[ "$SANDGATE_CALL" != x ] && [ -n "$SANDGATE_CALL" ]`, Env: map[string]string{"SANDGATE_CALL": "x"}}, 0, "", ""},
		{"cwd relative", protocol.ExecRequest{Command: "basename $(pwd)", Cwd: "sub"}, 0, "", "sub\n"},
		{"cwd absolute", protocol.ExecRequest{Command: "pwd", Cwd: "/"}, 0, "", "/\n"},
		{"command not found", protocol.ExecRequest{Command: "no-such-command-xyz"}, 127, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			ws, _ := m.Workdir("")
			if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			var r recorder
			res, err := m.Run(t.Context(), tt.req, r.emit)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantCode || res.Signal != tt.wantSignal {
				t.Errorf("exit = %d %q, want %d %q (stderr %q)", res.ExitCode, res.Signal, tt.wantCode, tt.wantSignal, r.stream(protocol.EventStderr))
			}
			if got := r.stream(protocol.EventStdout); got != tt.wantOut {
				t.Errorf("stdout = %q, want %q", got, tt.wantOut)
			}
			if res.TimedOut || res.Canceled || res.OOMKilled || res.Message != "" {
				t.Errorf("abnormal end reported: %+v", res)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	ws, _ := m.Workdir("")
	must(t, os.WriteFile(filepath.Join(ws, "file"), nil, 0o644))
	must(t, os.Symlink("/proc/self", filepath.Join(ws, "toproc")))
	must(t, os.Symlink("toproc", filepath.Join(ws, "toproc2")))
	must(t, os.Symlink("/proc/self/fd/0", filepath.Join(ws, "tofd")))
	must(t, os.Symlink("loop", filepath.Join(ws, "loop")))
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		req  protocol.ExecRequest
		want protocol.Code
	}{
		{"both command and argv", nil, protocol.ExecRequest{Command: "true", Argv: []string{"true"}}, protocol.CodeInvalid},
		{"neither", nil, protocol.ExecRequest{}, protocol.CodeInvalid},
		{"NUL in argv", nil, protocol.ExecRequest{Argv: []string{"echo", "a\x00b"}}, protocol.CodeInvalid},
		{"cwd missing", nil, protocol.ExecRequest{Command: "true", Cwd: "missing"}, protocol.CodeNotFound},
		{"cwd is a file", nil, protocol.ExecRequest{Command: "true", Cwd: "file"}, protocol.CodeNotDir},
		{"cwd symlink loop", nil, protocol.ExecRequest{Command: "true", Cwd: "loop"}, protocol.CodeInvalid},
		{"cwd /proc", nil, protocol.ExecRequest{Command: "true", Cwd: "/proc"}, protocol.CodeInvalid},
		{"cwd /proc/self/fd/N", nil, protocol.ExecRequest{Command: "true", Cwd: "/proc/self/fd/3"}, protocol.CodeInvalid},
		{"cwd /proc/1/cwd", nil, protocol.ExecRequest{Command: "true", Cwd: "/proc/1/cwd"}, protocol.CodeInvalid},
		{"cwd dotdot to /proc", nil, protocol.ExecRequest{Command: "true", Cwd: "/tmp/../proc/self/cwd"}, protocol.CodeInvalid},
		{"cwd symlink to /proc", nil, protocol.ExecRequest{Command: "true", Cwd: "toproc"}, protocol.CodeInvalid},
		{"cwd symlink chain to /proc", nil, protocol.ExecRequest{Command: "true", Cwd: "toproc2/cwd"}, protocol.CodeInvalid},
		{"cwd symlink to fd", nil, protocol.ExecRequest{Command: "true", Cwd: "tofd"}, protocol.CodeInvalid},
		{"executable missing", nil, protocol.ExecRequest{Argv: []string{"no-such-command-xyz"}}, protocol.CodeNotFound},
		{"executable path missing", nil, protocol.ExecRequest{Argv: []string{"./nope"}}, protocol.CodeNotFound},
		{"executable is a directory", nil, protocol.ExecRequest{Argv: []string{"/tmp"}}, protocol.CodeIsDir},
		{"executable not executable", nil, protocol.ExecRequest{Argv: []string{"./file"}}, protocol.CodePermission},
		{"env name with =", nil, protocol.ExecRequest{Command: "true", Env: map[string]string{"A=B": "c"}}, protocol.CodeInvalid},
		{"env empty name", nil, protocol.ExecRequest{Command: "true", Env: map[string]string{"": "c"}}, protocol.CodeInvalid},
		{"negative timeout", nil, protocol.ExecRequest{Command: "true", TimeoutMs: -1}, protocol.CodeInvalid},
		{"negative output cap", nil, protocol.ExecRequest{Command: "true", OutputCap: -1}, protocol.CodeInvalid},
		{"canceled before start", canceled, protocol.ExecRequest{Command: "true"}, protocol.CodeCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			var r recorder
			_, err := m.Run(ctx, tt.req, r.emit)
			if got := codeOf(err); got != tt.want {
				t.Errorf("Run error = %v (code %q), want code %q", err, got, tt.want)
			}
			if len(r.events) != 0 {
				t.Errorf("events emitted for a call that did not start: %v", r.events)
			}
		})
	}
	_, err := m.Run(t.Context(), protocol.ExecRequest{Argv: []string{"no-such-command-xyz"}}, func(protocol.Event) {})
	if !errors.Is(err, process.ErrNoExecutable) {
		t.Errorf("missing executable: %v does not wrap ErrNoExecutable", err)
	}
}

// TestRunOutputCap checks that output beyond the cap is counted and
// dropped, never buffered.
func TestRunOutputCap(t *testing.T) {
	m := newManager(t)
	const produced = 64 << 20
	var (
		r          recorder
		before     runtime.MemStats
		afterStats runtime.MemStats
	)
	runtime.ReadMemStats(&before)
	res, err := m.Run(t.Context(), protocol.ExecRequest{Command: "head -c 67108864 /dev/zero; echo err >&2", OutputCap: 1000}, r.emit)
	runtime.ReadMemStats(&afterStats)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.stream(protocol.EventStdout)); got != 1000 {
		t.Errorf("stdout delivered %d bytes, want the cap 1000", got)
	}
	if res.StdoutBytes != produced || !res.StdoutTruncated || res.StderrTruncated || res.StderrBytes != 4 {
		t.Errorf("result = %+v", res)
	}
	if alloc := afterStats.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MiB while discarding %d MiB", alloc>>20, produced>>20)
	}
}

// TestRunYes runs `yes` until the timeout: the default 1 MiB cap holds and
// the call ends on time. The timeout leaves a niced `yes` on a loaded
// machine ample time to pass the cap.
func TestRunYes(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	var r recorder
	res, err := m.Run(t.Context(), protocol.ExecRequest{Command: "yes", TimeoutMs: 3000}, r.emit)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.stream(protocol.EventStdout)); got != protocol.DefaultOutputCap {
		t.Errorf("stdout delivered %d bytes, want %d", got, protocol.DefaultOutputCap)
	}
	if !res.TimedOut || !res.StdoutTruncated || res.StdoutBytes <= protocol.DefaultOutputCap || res.Signal != "SIGKILL" {
		t.Errorf("result = %+v", res)
	}
	if res.Message != "timed out after 3s; the process tree was killed" {
		t.Errorf("message = %q", res.Message)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunCPU checks the rusage accounting of a busy child.
func TestRunCPU(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	res, err := m.Run(t.Context(), protocol.ExecRequest{Command: "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; head -c 20000000 /dev/zero | tail -c 1 >/dev/null"}, func(protocol.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.CPUMs <= 0 || res.MemoryPeakBytes < 1<<20 {
		t.Errorf("result = %+v, want CPU time and a memory peak", res)
	}
}
