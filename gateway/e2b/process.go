package e2b

import (
	"context"
	"fmt"
	"slices"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// processService is envd's process service on the runner's background
// processes (process.start, .list, .output, .write, .signal). A process
// belongs to the sandbox, not to the stream that started it: a client
// that disconnects leaves it running, and Connect attaches again, as
// with envd. Terminals (pty) are not offered.
type processService struct {
	a *API
}

const msgNoPty = "terminals (pty) are not supported by Sandgate; run commands without pty (commands.run, not pty.create)"

// List describes the sandbox's running processes.
func (s *processService) List(ctx context.Context, req *connect.Request[process.ListRequest]) (*connect.Response[process.ListResponse], error) {
	resp := &process.ListResponse{}
	op := Op{Name: "process.List", Scope: auth.ScopeExec, ReadOnly: true}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		var l protocol.ProcessList
		if err := c.Call(ctx, protocol.OpProcessList, nil, &l); err != nil {
			return err
		}
		for _, p := range l.Processes {
			if p.Running {
				resp.Processes = append(resp.Processes, processInfo(p))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// processInfo describes p as envd would. A process the runner reports
// without its argv (started by a command line) shows as /bin/sh -c.
func processInfo(p protocol.ProcessInfo) *process.ProcessInfo {
	cfg := &process.ProcessConfig{Cmd: "/bin/sh", Args: []string{"-c", p.Command}}
	if len(p.Argv) > 0 {
		cfg = &process.ProcessConfig{Cmd: p.Argv[0], Args: p.Argv[1:]}
	}
	if p.Cwd != "" {
		cfg.Cwd = &p.Cwd
	}
	info := &process.ProcessInfo{Config: cfg, Pid: uint32(p.Pid)}
	if p.Tag != "" {
		info.Tag = &p.Tag
	}
	return info
}

// findProcess returns the running process sel names: by pid, or by tag (the
// newest running one with it, as tags need not be unique).
func findProcess(ctx context.Context, c *protocol.Client, sel *process.ProcessSelector) (protocol.ProcessInfo, error) {
	if sel == nil || sel.Selector == nil {
		return protocol.ProcessInfo{}, invalidArgument("select the process by its pid or its tag")
	}
	var l protocol.ProcessList
	if err := c.Call(ctx, protocol.OpProcessList, nil, &l); err != nil {
		return protocol.ProcessInfo{}, err
	}
	// The list is oldest first; the newest match wins.
	for _, p := range slices.Backward(l.Processes) {
		if p.Running && selects(sel, p) {
			return p, nil
		}
	}
	return protocol.ProcessInfo{}, fmt.Errorf("no running process with %s; List (commands.list in the SDKs) shows the running ones: %w", describeSelector(sel), sandbox.ErrNotFound)
}

// selects reports whether sel names p.
func selects(sel *process.ProcessSelector, p protocol.ProcessInfo) bool {
	switch v := sel.Selector.(type) {
	case *process.ProcessSelector_Pid:
		return uint32(p.Pid) == v.Pid
	case *process.ProcessSelector_Tag:
		return p.Tag == v.Tag
	}
	return false
}

// describeSelector names sel for messages and the audit log.
func describeSelector(sel *process.ProcessSelector) string {
	if t, ok := sel.GetSelector().(*process.ProcessSelector_Tag); ok {
		return fmt.Sprintf("tag %q", t.Tag)
	}
	return fmt.Sprintf("pid %d", sel.GetPid())
}

// Update resizes a terminal, which Sandgate does not offer.
func (s *processService) Update(context.Context, *connect.Request[process.UpdateRequest]) (*connect.Response[process.UpdateResponse], error) {
	return nil, unimplemented(msgNoPty)
}

// StreamInput is input in a client stream, which connect-web (the SDKs'
// browser-compatible transport) cannot send over HTTP/1.1 anyway.
func (s *processService) StreamInput(context.Context, *connect.ClientStream[process.StreamInputRequest]) (*connect.Response[process.StreamInputResponse], error) {
	return nil, unimplemented("streaming input is not supported; send input with SendInput (sandbox.commands.sendStdin)")
}
