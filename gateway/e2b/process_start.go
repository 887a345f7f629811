package e2b

import (
	"context"
	"errors"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// Start starts a background process and follows it until it exits.
//
// Lifetimes, as envd decides them: the process outlives the stream (a
// client that goes away leaves it running; Connect follows it again),
// but the request's own deadline (Connect-Timeout-Ms, the SDKs'
// timeoutMs, 60 s unless the caller says 0) bounds the process too, so
// the runner kills it then.
func (s *processService) Start(ctx context.Context, req *connect.Request[process.StartRequest], stream *connect.ServerStream[process.StartResponse]) error {
	exec, err := execRequest(ctx, req.Msg)
	if err != nil {
		return err
	}
	op := Op{Name: "process.Start", Scope: auth.ScopeExec,
		Summary: map[string]any{"cmd": strings.Join(exec.Argv, " "), "cwd": exec.Cwd, "tag": exec.Tag}}
	return s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		var info protocol.ProcessInfo
		if err := c.Call(ctx, protocol.OpProcessStart, exec, &info); err != nil {
			return err
		}
		if !req.Msg.GetStdin() {
			if err := closeStdin(ctx, c, info.ID); err != nil {
				return err
			}
		}
		f := &follower{c: c, id: info.ID, ping: keepaliveInterval(req.Header()), send: func(ev *process.ProcessEvent) error {
			return stream.Send(&process.StartResponse{Event: ev})
		}}
		return f.follow(ctx, info.Pid, 0)
	})
}

// execRequest is the runner's request for a StartRequest.
func execRequest(ctx context.Context, m *process.StartRequest) (protocol.ExecRequest, error) {
	if m.Pty != nil {
		return protocol.ExecRequest{}, unimplemented(msgNoPty)
	}
	cfg := m.GetProcess()
	if cfg.GetCmd() == "" {
		return protocol.ExecRequest{}, invalidArgument("process.cmd is empty: name the program to run, e.g. /bin/bash with args [-l, -c, <command>]")
	}
	exec := protocol.ExecRequest{
		Argv: append([]string{cfg.GetCmd()}, cfg.GetArgs()...),
		Env:  cfg.GetEnvs(),
		Cwd:  cfg.GetCwd(),
		Tag:  m.GetTag(),
	}
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		if left <= 0 {
			return protocol.ExecRequest{}, connect.NewError(connect.CodeDeadlineExceeded, errors.New("the request's timeout passed before the process could start; give it a longer timeoutMs"))
		}
		exec.TimeoutMs = max(left.Milliseconds(), 1)
	}
	return exec, nil
}

// closeStdin gives a process started without stdin the EOF envd's
// /dev/null would: the runner always opens a pipe, and a command that
// reads its input (cat, a REPL) must not wait on it forever.
func closeStdin(ctx context.Context, c *protocol.Client, id string) error {
	err := c.Call(ctx, protocol.OpProcessWrite, protocol.ProcessWriteRequest{ID: id, Close: true}, nil)
	if protocol.CodeOf(err) == protocol.CodeNotFound {
		return nil // it exited and was forgotten already: nothing to close
	}
	return err
}
