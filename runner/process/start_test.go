package process_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

func TestStartOutput(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	info, err := m.Start(protocol.ExecRequest{Command: "echo out; echo err >&2; sleep 0.2; echo more; exit 4"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.ID, "p-") || len(info.ID) != 10 || info.Pid <= 0 || !info.Running || info.Command == "" {
		t.Errorf("info = %+v", info)
	}
	end := waitExited(t, m, info.ID)
	if end.ExitCode == nil || *end.ExitCode != 4 || end.EndedAt == nil || end.OutputBytes != 13 {
		t.Errorf("ended info = %+v", end)
	}
	out, err := m.Output(t.Context(), protocol.ProcessOutputRequest{ID: info.ID})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Stdout) != "out\nmore\n" || string(out.Stderr) != "err\n" || out.NextOffset != 13 || out.More || out.Dropped != 0 {
		t.Errorf("output = %+v", out)
	}
}

func TestStartOutputWindow(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	digits, err := m.Start(protocol.ExecRequest{Command: "printf 0123456789"})
	must(t, err)
	big, err := m.Start(protocol.ExecRequest{Command: "head -c 3000000 /dev/zero | tr '\\0' a"})
	must(t, err)
	waitExited(t, m, digits.ID)
	waitExited(t, m, big.ID)
	tests := []struct {
		name string
		req  protocol.ProcessOutputRequest
		want protocol.ProcessOutput
		code protocol.Code
	}{
		{"slice", protocol.ProcessOutputRequest{ID: digits.ID, Offset: 3, MaxBytes: 4},
			protocol.ProcessOutput{Stdout: []byte("3456"), Offset: 3, NextOffset: 7, More: true}, ""},
		{"to the end", protocol.ProcessOutputRequest{ID: digits.ID, Offset: 7},
			protocol.ProcessOutput{Stdout: []byte("789"), Offset: 7, NextOffset: 10}, ""},
		{"at the end", protocol.ProcessOutputRequest{ID: digits.ID, Offset: 10},
			protocol.ProcessOutput{Offset: 10, NextOffset: 10}, ""},
		{"dropped", protocol.ProcessOutputRequest{ID: big.ID, Offset: 0, MaxBytes: 10},
			protocol.ProcessOutput{Stdout: []byte("aaaaaaaaaa"), Offset: 3000000 - 1<<20, NextOffset: 3000000 - 1<<20 + 10, Dropped: 3000000 - 1<<20, More: true}, ""},
		{"beyond the end", protocol.ProcessOutputRequest{ID: digits.ID, Offset: 11}, protocol.ProcessOutput{}, protocol.CodeInvalid},
		{"negative offset", protocol.ProcessOutputRequest{ID: digits.ID, Offset: -1}, protocol.ProcessOutput{}, protocol.CodeInvalid},
		{"negative max", protocol.ProcessOutputRequest{ID: digits.ID, MaxBytes: -1}, protocol.ProcessOutput{}, protocol.CodeInvalid},
		{"unknown id", protocol.ProcessOutputRequest{ID: "p-00000000"}, protocol.ProcessOutput{}, protocol.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Output(t.Context(), tt.req)
			if codeOf(err) != tt.code {
				t.Fatalf("Output error = %v, want code %q", err, tt.code)
			}
			if err != nil {
				return
			}
			if !bytes.Equal(got.Stdout, tt.want.Stdout) || len(got.Stderr) != 0 || got.Offset != tt.want.Offset ||
				got.NextOffset != tt.want.NextOffset || got.Dropped != tt.want.Dropped || got.More != tt.want.More {
				t.Errorf("Output = stdout %q offset %d next %d dropped %d more %v, want %q %d %d %d %v",
					got.Stdout, got.Offset, got.NextOffset, got.Dropped, got.More,
					tt.want.Stdout, tt.want.Offset, tt.want.NextOffset, tt.want.Dropped, tt.want.More)
			}
		})
	}
	out, err := m.Output(t.Context(), protocol.ProcessOutputRequest{ID: big.ID, Offset: 3000000 - 1<<20, MaxBytes: 1 << 30})
	must(t, err)
	if len(out.Stdout) != 1<<20 || out.More {
		t.Errorf("whole window: %d bytes, more %v", len(out.Stdout), out.More)
	}
}

// TestStartInterleaved checks that the log keeps stdout and stderr apart
// and each in order.
func TestStartInterleaved(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	info, err := m.Start(protocol.ExecRequest{Command: "for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; sleep 0.01; done"})
	must(t, err)
	waitExited(t, m, info.ID)
	var stdout, stderr []byte
	for off := int64(0); ; {
		out, err := m.Output(t.Context(), protocol.ProcessOutputRequest{ID: info.ID, Offset: off, MaxBytes: 5})
		must(t, err)
		stdout, stderr = append(stdout, out.Stdout...), append(stderr, out.Stderr...)
		if off = out.NextOffset; !out.More {
			break
		}
	}
	if string(stdout) != "o1\no2\no3\no4\no5\n" || string(stderr) != "e1\ne2\ne3\ne4\ne5\n" {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

func TestStartStdin(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	info, err := m.Start(protocol.ExecRequest{Command: "cat", Stdin: []byte("first\n")})
	must(t, err)
	_, err = m.Write(protocol.ProcessWriteRequest{ID: info.ID, Data: []byte("second\n")})
	must(t, err)
	waitOutput(t, m, info.ID, "first\nsecond\n")
	_, err = m.Write(protocol.ProcessWriteRequest{ID: info.ID, Data: []byte("third\n"), Close: true})
	must(t, err)
	end := waitExited(t, m, info.ID)
	if *end.ExitCode != 0 || end.OutputBytes != int64(len("first\nsecond\nthird\n")) {
		t.Errorf("ended = %+v", end)
	}
	tests := []struct {
		name string
		req  protocol.ProcessWriteRequest
		code protocol.Code
	}{
		{"write after exit", protocol.ProcessWriteRequest{ID: info.ID, Data: []byte("x")}, protocol.CodeInvalid},
		{"close again", protocol.ProcessWriteRequest{ID: info.ID, Close: true}, ""},
		{"unknown id", protocol.ProcessWriteRequest{ID: "p-nope"}, protocol.CodeNotFound},
	}
	for _, tt := range tests {
		if _, err := m.Write(tt.req); codeOf(err) != tt.code {
			t.Errorf("%s: Write error = %v, want code %q", tt.name, err, tt.code)
		}
	}
}

func TestStartSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cmd, signal, wantSignal string
		wantCode                      int
	}{
		// A shell may take a signal that arrives while it starts without
		// dying of it, so the plain cases run sleep directly.
		{"default is SIGTERM", "", "", "SIGTERM", -1},
		{"name", "", "SIGINT", "SIGINT", -1},
		{"short name", "", "hup", "SIGHUP", -1},
		{"number", "", "9", "SIGKILL", -1},
		{"handled", "trap 'exit 7' TERM; echo ready; sleep 1000 & wait", "TERM", "", 7},
		{"tree", "setsid sleep 1002.001 & sleep 1002.002 & wait", "KILL", "SIGKILL", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			req := protocol.ExecRequest{Command: tt.cmd}
			if tt.cmd == "" {
				req.Argv = []string{"sleep", "1000"}
			}
			info, err := m.Start(req)
			must(t, err)
			if strings.Contains(tt.cmd, "ready") {
				waitOutput(t, m, info.ID, "ready\n") // the trap is set
			}
			got, err := m.Signal(protocol.ProcessSignalRequest{ID: info.ID, Signal: tt.signal})
			must(t, err)
			if got.Running {
				got = waitExited(t, m, info.ID)
			}
			if got.Signal != tt.wantSignal || got.ExitCode == nil || *got.ExitCode != tt.wantCode {
				t.Errorf("info = %+v, want %d %q", got, tt.wantCode, tt.wantSignal)
			}
			assertClean(t, info.Pid, "", "sleep 1002.00")
			if _, err := m.Signal(protocol.ProcessSignalRequest{ID: info.ID}); err != nil {
				t.Errorf("signal after exit: %v", err)
			}
		})
	}
}

func TestStartSignalErrors(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	info, err := m.Start(protocol.ExecRequest{Command: "trap '' TERM; echo ready; sleep 1000"})
	must(t, err)
	waitOutput(t, m, info.ID, "ready\n")
	tests := []struct {
		signal string
		code   protocol.Code
	}{
		{"SIGNOPE", protocol.CodeInvalid},
		{"0", protocol.CodeInvalid},
		{"65", protocol.CodeInvalid},
	}
	for _, tt := range tests {
		if _, err := m.Signal(protocol.ProcessSignalRequest{ID: info.ID, Signal: tt.signal}); codeOf(err) != tt.code {
			t.Errorf("signal %q: error %v, want code %q", tt.signal, err, tt.code)
		}
	}
	if _, err := m.Signal(protocol.ProcessSignalRequest{ID: "p-nope"}); codeOf(err) != protocol.CodeNotFound {
		t.Errorf("unknown id: %v", err)
	}
	// TERM is ignored: still running after Signal returns.
	got, err := m.Signal(protocol.ProcessSignalRequest{ID: info.ID, Signal: "TERM"})
	must(t, err)
	if !got.Running {
		t.Errorf("ignored SIGTERM ended the process: %+v", got)
	}
}

// TestStartTreeEndsWithRoot checks that a background process's
// descendants die with it.
func TestStartTreeEndsWithRoot(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	info, err := m.Start(protocol.ExecRequest{Command: "setsid sleep 1003.001 & sleep 1003.002 & sleep 0.1"})
	must(t, err)
	end := waitExited(t, m, info.ID)
	if *end.ExitCode != 0 {
		t.Errorf("ended = %+v", end)
	}
	assertClean(t, info.Pid, "", "sleep 1003.00")
}

func TestStartTimeout(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	info, err := m.Start(protocol.ExecRequest{Command: "sleep 1004.001 & sleep 1000", TimeoutMs: 200})
	must(t, err)
	end := waitExited(t, m, info.ID)
	if end.Signal != "SIGKILL" || end.Message != "timed out after 200ms; the process tree was killed" {
		t.Errorf("ended = %+v", end)
	}
	assertClean(t, info.Pid, "", "sleep 1004.001")
	if _, err := m.Start(protocol.ExecRequest{Command: "true", TimeoutMs: -1}); codeOf(err) != protocol.CodeInvalid {
		t.Errorf("negative timeout: %v", err)
	}
}

// TestStartLimits checks the cap on running processes and the eviction
// of exited ones.
func TestStartLimits(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	var first string
	for i := range 64 {
		info, err := m.Start(protocol.ExecRequest{Command: fmt.Sprintf("exec sleep 1005.%03d", i)})
		must(t, err)
		if i == 0 {
			first = info.ID
		}
	}
	if _, err := m.Start(protocol.ExecRequest{Command: "true"}); codeOf(err) != protocol.CodeTooLarge {
		t.Fatalf("65th Start: %v, want too_large", err)
	}
	_, err := m.Signal(protocol.ProcessSignalRequest{ID: first, Signal: "KILL"})
	must(t, err)
	for range 200 {
		info, err := m.Start(protocol.ExecRequest{Command: "true"})
		must(t, err)
		waitExited(t, m, info.ID)
	}
	if n := len(m.List().Processes); n != 256 {
		t.Errorf("tracked %d processes, want 256", n)
	}
	if _, err := m.Output(t.Context(), protocol.ProcessOutputRequest{ID: first}); codeOf(err) != protocol.CodeNotFound {
		t.Errorf("oldest exited process not evicted: %v", err)
	}
	running := 0
	for _, p := range m.List().Processes {
		if p.Running {
			running++
		}
	}
	if running != 63 {
		t.Errorf("%d running, want 63 (running processes are never evicted)", running)
	}
	m.Close()
	for _, p := range m.List().Processes {
		if p.Running {
			t.Errorf("still running after Close: %+v", p)
		}
	}
	assertClean(t, 0, "", "sleep 1005.")
}

// TestChildrenGetDefaultSignals: even when the runner itself was started
// with SIGHUP and SIGINT ignored (as under nohup), user processes start
// with default dispositions.
func TestChildrenGetDefaultSignals(t *testing.T) {
	t.Parallel()
	if os.Getenv("SANDGATE_TEST_IGNORED_CHILD") == "1" {
		if !signal.Ignored(syscall.SIGHUP) || !signal.Ignored(syscall.SIGINT) {
			t.Fatal("setup: the test binary should start with SIGHUP and SIGINT ignored")
		}
		m := newManager(t)
		var out strings.Builder
		_, err := m.Run(t.Context(), protocol.ExecRequest{Command: "grep '^SigIgn' /proc/self/status"}, func(ev protocol.Event) { out.Write(ev.Data) })
		must(t, err)
		var mask uint64
		if _, err := fmt.Sscanf(out.String(), "SigIgn:\t%x", &mask); err != nil {
			t.Fatalf("parse %q: %v", out.String(), err)
		}
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
			if mask&(1<<(uint(sig)-1)) != 0 {
				t.Errorf("user process starts with %v ignored (SigIgn %x)", sig, mask)
			}
		}
		return
	}
	// Re-run this test in a child that starts with SIGHUP and SIGINT
	// ignored: the shell's trap sets them and exec keeps them.
	cmd := exec.Command("sh", "-c", `trap "" HUP INT; exec "$0" "$@"`, os.Args[0], "-test.run=^TestChildrenGetDefaultSignals$")
	cmd.Env = append(os.Environ(), "SANDGATE_TEST_IGNORED_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child test: %v\n%s", err, out)
	}
}
