package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestOutputWaitWakes starts a waiting Output at the end of a running
// process's output and checks what ends the wait: new output, the
// process's exit or the caller's cancellation. The assertions are on what
// is returned, never on how long it took.
func TestOutputWaitWakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		act     func(t *testing.T, m *process.Manager, id string, cancel context.CancelFunc)
		stdout  string
		running bool
		code    protocol.Code
	}{
		{name: "output arrives", stdout: "hello\n", running: true,
			act: func(t *testing.T, m *process.Manager, id string, _ context.CancelFunc) {
				_, err := m.Write(protocol.ProcessWriteRequest{ID: id, Data: []byte("hello\n")})
				must(t, err)
			}},
		{name: "exit without output", stdout: "",
			act: func(t *testing.T, m *process.Manager, id string, _ context.CancelFunc) {
				_, err := m.Write(protocol.ProcessWriteRequest{ID: id, Close: true})
				must(t, err)
			}},
		{name: "canceled", code: protocol.CodeCanceled,
			act: func(_ *testing.T, _ *process.Manager, _ string, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			// Prints its first line of input once more and then sleeps, so
			// that the process is still running when the echo wakes the
			// reader; at EOF read fails and the shell exits silently.
			info, err := m.Start(protocol.ExecRequest{Command: "read x || exit 3; echo $x; exec sleep 1000"})
			must(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type answer struct {
				out protocol.ProcessOutput
				err error
			}
			got := make(chan answer, 1)
			go func() {
				out, err := m.Output(ctx, protocol.ProcessOutputRequest{ID: info.ID, WaitMs: 30000})
				got <- answer{out, err}
			}()
			tt.act(t, m, info.ID, cancel)
			var a answer
			select {
			case a = <-got:
			case <-time.After(time.Minute): // a hang guard, not a timing assertion
				t.Fatal("Output with wait_ms did not return a minute after the event that should end its wait")
			}
			if codeOf(a.err) != tt.code {
				t.Fatalf("Output error = %v, want code %q", a.err, tt.code)
			}
			if a.err != nil {
				return
			}
			// echo's line is one write(2) to the pipe, so the chunk that
			// ends the wait holds all of it.
			if string(a.out.Stdout) != tt.stdout || len(a.out.Stderr) != 0 || a.out.NextOffset != int64(len(tt.stdout)) {
				t.Errorf("stdout %q stderr %q next %d, want %q and nothing", a.out.Stdout, a.out.Stderr, a.out.NextOffset, tt.stdout)
			}
			if a.out.Process.Running != tt.running {
				t.Errorf("process = %+v, want running %v", a.out.Process, tt.running)
			}
			if tt.running {
				return
			}
			if a.out.Process.ExitCode == nil || *a.out.Process.ExitCode != 3 {
				t.Errorf("process = %+v, want it exited with code 3", a.out.Process)
			}
		})
	}
}

// TestOutputWaitAnswersAtOnce covers the reads that do not wait (or whose
// wait is bounded by a tiny wait_ms) and the refusals.
func TestOutputWaitAnswersAtOnce(t *testing.T) {
	t.Parallel()
	m := newManager(t)
	done, err := m.Start(protocol.ExecRequest{Command: "printf abc"})
	must(t, err)
	waitExited(t, m, done.ID)
	quiet, err := m.Start(protocol.ExecRequest{Command: "cat"})
	must(t, err)
	tests := []struct {
		name   string
		req    protocol.ProcessOutputRequest
		stdout string
		next   int64
		code   protocol.Code
	}{
		{"output waiting", protocol.ProcessOutputRequest{ID: done.ID, WaitMs: 30000}, "abc", 3, ""},
		{"exited, at the end", protocol.ProcessOutputRequest{ID: done.ID, Offset: 3, WaitMs: 30000}, "", 3, ""},
		{"wait elapses", protocol.ProcessOutputRequest{ID: quiet.ID, WaitMs: 1}, "", 0, ""},
		{"wait above the cap", protocol.ProcessOutputRequest{ID: done.ID, Offset: 3, WaitMs: 1 << 62}, "", 3, ""},
		{"negative wait", protocol.ProcessOutputRequest{ID: quiet.ID, WaitMs: -1}, "", 0, protocol.CodeInvalid},
		{"beyond the end", protocol.ProcessOutputRequest{ID: quiet.ID, Offset: 1, WaitMs: 30000}, "", 0, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := m.Output(t.Context(), tt.req)
			if codeOf(err) != tt.code {
				t.Fatalf("Output error = %v, want code %q", err, tt.code)
			}
			if err == nil && (string(got.Stdout) != tt.stdout || got.NextOffset != tt.next) {
				t.Errorf("stdout %q next %d, want %q %d", got.Stdout, got.NextOffset, tt.stdout, tt.next)
			}
		})
	}
}
