package e2b

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// SendInput writes to a process's stdin. The audit record keeps how
// much was written, never what.
func (s *processService) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	in := req.Msg.GetInput()
	if _, ok := in.GetInput().(*process.ProcessInput_Pty); ok {
		return nil, unimplemented(msgNoPty)
	}
	sel := req.Msg.GetProcess()
	data := in.GetStdin()
	op := Op{Name: "process.SendInput", Scope: auth.ScopeExec, Summary: map[string]any{"process": describeSelector(sel), "bytes": len(data)}}
	err := s.write(ctx, req.Header(), op, sel, protocol.ProcessWriteRequest{Data: data})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

// CloseStdin closes a process's stdin, so that its reader sees EOF.
func (s *processService) CloseStdin(ctx context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	sel := req.Msg.GetProcess()
	op := Op{Name: "process.CloseStdin", Scope: auth.ScopeExec, Summary: map[string]any{"process": describeSelector(sel)}}
	err := s.write(ctx, req.Header(), op, sel, protocol.ProcessWriteRequest{Close: true})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

// write sends w to the stdin of the process sel names.
func (s *processService) write(ctx context.Context, h http.Header, op Op, sel *process.ProcessSelector, w protocol.ProcessWriteRequest) error {
	return s.a.do(ctx, h, op, func(ctx context.Context, c *protocol.Client) error {
		p, err := findProcess(ctx, c, sel)
		if err != nil {
			return err
		}
		w.ID = p.ID
		return c.Call(ctx, protocol.OpProcessWrite, w, nil)
	})
}
