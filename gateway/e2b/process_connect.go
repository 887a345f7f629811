package e2b

import (
	"context"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// Connect follows a running process, by pid or tag, from the start of
// the output the runner still keeps, until it exits. Leaving does not
// stop the process.
func (s *processService) Connect(ctx context.Context, req *connect.Request[process.ConnectRequest], stream *connect.ServerStream[process.ConnectResponse]) error {
	sel := req.Msg.GetProcess()
	op := Op{Name: "process.Connect", Scope: auth.ScopeExec, ReadOnly: true, Summary: map[string]any{"process": describeSelector(sel)}}
	return s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		p, err := findProcess(ctx, c, sel)
		if err != nil {
			return err
		}
		f := &follower{c: c, id: p.ID, ping: keepaliveInterval(req.Header()), send: func(ev *process.ProcessEvent) error {
			return stream.Send(&process.ConnectResponse{Event: ev})
		}}
		return f.follow(ctx, p.Pid, 0)
	})
}
