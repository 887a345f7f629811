package e2b_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
)

// eventStream is a Start or Connect stream as a client reads it.
type eventStream interface {
	Receive() bool
	Err() error
}

// receiver reads one stream's process events.
type receiver[T interface{ GetEvent() *process.ProcessEvent }] struct {
	s interface {
		eventStream
		Msg() T
	}
}

// next returns the next event other than a keepalive, or nil at the
// end of the stream (failing the test if it ended in an error).
func (r receiver[T]) next(t *testing.T) *process.ProcessEvent {
	t.Helper()
	for r.s.Receive() {
		if ev := r.s.Msg().GetEvent(); ev.GetKeepalive() == nil {
			return ev
		}
	}
	if err := r.s.Err(); err != nil {
		t.Fatalf("stream ended with %v", err)
	}
	return nil
}

// rest reads to the end of the stream: stdout, stderr and the end event,
// which must be last.
func (r receiver[T]) rest(t *testing.T) (stdout, stderr string, end *process.ProcessEvent_EndEvent) {
	t.Helper()
	for ev := r.next(t); ev != nil; ev = r.next(t) {
		if end != nil {
			t.Fatalf("event %v after the end event", ev)
		}
		stdout += string(ev.GetData().GetStdout())
		stderr += string(ev.GetData().GetStderr())
		end = ev.GetEnd()
	}
	if end == nil {
		t.Fatal("the stream ended without an end event")
	}
	return stdout, stderr, end
}

// start starts argv and returns its stream after the start event.
func start(t *testing.T, ctx context.Context, c interface {
	Start(context.Context, *connect.Request[process.StartRequest]) (*connect.ServerStreamForClient[process.StartResponse], error)
}, m *process.StartRequest) (receiver[*process.StartResponse], uint32) {
	t.Helper()
	s, err := c.Start(ctx, connect.NewRequest(m))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := receiver[*process.StartResponse]{s: s}
	ev := r.next(t)
	if ev.GetStart() == nil || ev.GetStart().GetPid() == 0 {
		t.Fatalf("first event %v, want a start event with a pid", ev)
	}
	return r, ev.GetStart().GetPid()
}

func bash(cmd string) *process.ProcessConfig {
	return &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", cmd}} // as the SDKs' commands.run
}

func pidSel(pid uint32) *process.ProcessSelector {
	return &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
}

func TestStartReportsOutputAndExit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, _ := start(t, guard(t), e.proc, &process.StartRequest{Process: bash("echo hi; echo err >&2; exit 3")})
	stdout, stderr, end := r.rest(t)
	if stdout != "hi\n" || stderr != "err\n" {
		t.Errorf("stdout %q, stderr %q; want hi and err", stdout, stderr)
	}
	if end.GetExitCode() != 3 || !end.GetExited() || end.GetStatus() != "exit status 3" || end.GetError() != "exit status 3" {
		t.Errorf("end %v, want exit code 3, exited, status and error \"exit status 3\"", end)
	}
}

func TestStartWithEnvAndCwd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.workspace, "sub")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := bash(`printf '%s\n' "$GREETING"; pwd`)
	cfg.Envs = map[string]string{"GREETING": "secret-value"}
	cfg.Cwd = &dir
	r, _ := start(t, guard(t), e.proc, &process.StartRequest{Process: cfg})
	stdout, _, end := r.rest(t)
	if want := "secret-value\n" + dir + "\n"; stdout != want || end.GetExitCode() != 0 || end.Error != nil {
		t.Errorf("stdout %q, end %v; want %q and exit 0 without error", stdout, end, want)
	}
	for _, op := range e.runner.recorded() {
		if strings.Contains(fmt.Sprint(op.Summary), "secret-value") {
			t.Errorf("audit summary %v holds an environment value", op.Summary)
		}
	}
}

// TestStartStreamsBeforeEnd checks that output arrives while the
// process runs: each line is printed only after the test has received
// the one before and answered it, so no ordering of events could pass
// unless they are streamed.
func TestStartStreamsBeforeEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	stdin := true
	r, pid := start(t, ctx, e.proc, &process.StartRequest{Process: bash("for i in 1 2 3; do echo line$i; read x; done"), Stdin: &stdin})
	for i := 1; i <= 3; i++ {
		var got string
		for want := fmt.Sprintf("line%d\n", i); got != want; {
			ev := r.next(t)
			if ev.GetData() == nil {
				t.Fatalf("event %v before line %d, want data", ev, i)
			}
			got += string(ev.GetData().GetStdout())
		}
		in := &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("go\n")}}
		if _, err := e.proc.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{Process: pidSel(pid), Input: in})); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, end := r.rest(t); end.GetExitCode() != 0 {
		t.Errorf("end %v, want exit 0", end)
	}
}

func TestSendInputThenCloseStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	stdin := true
	r, pid := start(t, ctx, e.proc, &process.StartRequest{Process: &process.ProcessConfig{Cmd: "cat"}, Stdin: &stdin})
	in := &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("fed through stdin")}}
	if _, err := e.proc.SendInput(ctx, connect.NewRequest(&process.SendInputRequest{Process: pidSel(pid), Input: in})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.proc.CloseStdin(ctx, connect.NewRequest(&process.CloseStdinRequest{Process: pidSel(pid)})); err != nil {
		t.Fatal(err)
	}
	if stdout, _, end := r.rest(t); stdout != "fed through stdin" || end.GetExitCode() != 0 {
		t.Errorf("stdout %q, end %v; want the input back and exit 0", stdout, end)
	}
}

// TestStartWithoutStdinReadsEOF: the SDKs start commands with stdin
// false, and a command that reads its input must not wait for ever.
func TestStartWithoutStdinReadsEOF(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, _ := start(t, guard(t), e.proc, &process.StartRequest{Process: bash("cat; echo done")})
	if stdout, _, end := r.rest(t); stdout != "done\n" || end.GetExitCode() != 0 {
		t.Errorf("stdout %q, end %v; want done and exit 0", stdout, end)
	}
}

// TestProcessOutlivesStream leaves a process's Start stream, finds it
// in List, follows it again with Connect and kills it.
func TestProcessOutlivesStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	streamCtx, leave := context.WithCancel(ctx)
	r, pid := start(t, streamCtx, e.proc, &process.StartRequest{Process: bash("echo ready; exec sleep 600")})
	if ev := r.next(t); string(ev.GetData().GetStdout()) != "ready\n" {
		t.Fatalf("event %v, want ready", ev)
	}
	leave()

	l, err := e.proc.List(ctx, connect.NewRequest(&process.ListRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(l.Msg.GetProcesses(), func(p *process.ProcessInfo) bool { return p.GetPid() == pid })
	if i < 0 {
		t.Fatalf("List %v lacks pid %d after its stream was left", l.Msg, pid)
	}
	if cfg := l.Msg.GetProcesses()[i].GetConfig(); len(cfg.GetArgs()) == 0 {
		t.Errorf("List config %v, want the command and its args", cfg)
	}

	s, err := e.proc.Connect(ctx, connect.NewRequest(&process.ConnectRequest{Process: pidSel(pid)}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cr := receiver[*process.ConnectResponse]{s: s}
	if ev := cr.next(t); ev.GetStart().GetPid() != pid {
		t.Fatalf("first Connect event %v, want start with pid %d", ev, pid)
	}
	if _, err := e.proc.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{Process: pidSel(pid), Signal: process.Signal_SIGNAL_SIGKILL})); err != nil {
		t.Fatal(err)
	}
	stdout, _, end := cr.rest(t)
	if stdout != "ready\n" {
		t.Errorf("Connect replayed %q, want the kept output ready", stdout)
	}
	if end.GetStatus() != "signal: killed" || end.GetExited() || end.GetExitCode() != -1 {
		t.Errorf("end %v, want signal: killed, not exited, exit code -1", end)
	}
}

func TestConnectByTag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	tag := "server"
	streamCtx, leave := context.WithCancel(ctx)
	_, pid := start(t, streamCtx, e.proc, &process.StartRequest{Process: bash("exec sleep 600"), Tag: &tag})
	leave()
	l, err := e.proc.List(ctx, connect.NewRequest(&process.ListRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(l.Msg.GetProcesses(), func(p *process.ProcessInfo) bool { return p.GetTag() == tag }) {
		t.Skip("this runner does not report process tags yet (runner/process: Tag in ProcessInfo)")
	}
	byTag := &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: tag}}
	s, err := e.proc.Connect(ctx, connect.NewRequest(&process.ConnectRequest{Process: byTag}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ev := (receiver[*process.ConnectResponse]{s: s}).next(t); ev.GetStart().GetPid() != pid {
		t.Fatalf("Connect by tag: first event %v, want start with pid %d", ev, pid)
	}
	if _, err := e.proc.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{Process: byTag, Signal: process.Signal_SIGNAL_SIGTERM})); err != nil {
		t.Fatal(err)
	}
}

func TestProcessErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noExec := newEnv(t, "sandbox:files:read")
	wrongToken, _ := e.clients("wrong-token")
	ctx := guard(t)
	size := &process.PTY{Size: &process.PTY_Size{Cols: 80, Rows: 24}}
	startErr := func(c interface {
		Start(context.Context, *connect.Request[process.StartRequest]) (*connect.ServerStreamForClient[process.StartResponse], error)
	}, m *process.StartRequest) error {
		s, err := c.Start(ctx, connect.NewRequest(m))
		if err != nil {
			return err
		}
		defer s.Close()
		for s.Receive() {
		}
		return s.Err()
	}
	for _, tc := range []struct {
		name string
		call func() error
		want connect.Code
	}{
		{"wrong token", func() error {
			_, err := wrongToken.List(ctx, connect.NewRequest(&process.ListRequest{}))
			return err
		}, connect.CodeNotFound},
		{"missing scope", func() error {
			return startErr(noExec.proc, &process.StartRequest{Process: bash("true")})
		}, connect.CodePermissionDenied},
		{"pty", func() error {
			return startErr(e.proc, &process.StartRequest{Process: bash("true"), Pty: size})
		}, connect.CodeUnimplemented},
		{"resize", func() error {
			_, err := e.proc.Update(ctx, connect.NewRequest(&process.UpdateRequest{Process: pidSel(1), Pty: size}))
			return err
		}, connect.CodeUnimplemented},
		{"empty cmd", func() error {
			return startErr(e.proc, &process.StartRequest{Process: &process.ProcessConfig{}})
		}, connect.CodeInvalidArgument},
		{"missing program", func() error {
			return startErr(e.proc, &process.StartRequest{Process: &process.ProcessConfig{Cmd: "/no/such/program"}})
		}, connect.CodeNotFound},
		{"kill unknown pid", func() error {
			_, err := e.proc.SendSignal(ctx, connect.NewRequest(&process.SendSignalRequest{Process: pidSel(999999), Signal: process.Signal_SIGNAL_SIGKILL}))
			return err
		}, connect.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Code() != tc.want {
				t.Fatalf("error %v, want code %v", err, tc.want)
			}
			if ce.Message() == "" {
				t.Error("the error has no message")
			}
		})
	}
}
