package e2b

import (
	"context"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// signalNames are the runner's names for the signals a client may send.
var signalNames = map[process.Signal]string{
	process.Signal_SIGNAL_SIGTERM: "SIGTERM",
	process.Signal_SIGNAL_SIGKILL: "SIGKILL",
}

// SendSignal signals a process's whole tree. An unknown process is
// NotFound, which the SDKs' kill reports as false.
func (s *processService) SendSignal(ctx context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	sig, ok := signalNames[req.Msg.GetSignal()]
	if !ok {
		return nil, invalidArgument("signal must be SIGNAL_SIGTERM or SIGNAL_SIGKILL")
	}
	sel := req.Msg.GetProcess()
	op := Op{Name: "process.SendSignal", Scope: auth.ScopeExec, Summary: map[string]any{"process": describeSelector(sel), "signal": sig}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		p, err := findProcess(ctx, c, sel)
		if err != nil {
			return err
		}
		return c.Call(ctx, protocol.OpProcessSignal, protocol.ProcessSignalRequest{ID: p.ID, Signal: sig}, nil)
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}
