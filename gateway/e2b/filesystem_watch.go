package e2b

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// watchInterval is how often a watch stream lists its directory.
const watchInterval = 300 * time.Millisecond

// WatchDir streams the changes in a directory, found by polling (see
// poller), until the client leaves or its deadline passes. The start
// event goes out once the baseline is taken, so that every change after
// the client saw it is reported.
func (s *filesystemService) WatchDir(ctx context.Context, req *connect.Request[filesystem.WatchDirRequest], stream *connect.ServerStream[filesystem.WatchDirResponse]) error {
	m := req.Msg
	p := newPoller(m.GetPath(), m.GetRecursive(), m.GetIncludeEntry())
	op := Op{Name: "filesystem.WatchDir", Scope: auth.ScopeFilesRead, ReadOnly: true,
		Summary: map[string]any{"path": m.GetPath(), "recursive": m.GetRecursive()}}
	return s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		if _, err := p.poll(ctx, c); err != nil {
			return err
		}
		start := &filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Start{Start: &filesystem.WatchDirResponse_StartEvent{}}}
		if err := stream.Send(start); err != nil {
			return err
		}
		return watchLoop(ctx, c, p, keepaliveInterval(req.Header()), stream.Send)
	})
}

// watchLoop polls until ctx ends, sending each change, and a keepalive when
// nothing went out for ping.
func watchLoop(ctx context.Context, c *protocol.Client, p *poller, ping time.Duration, send func(*filesystem.WatchDirResponse) error) error {
	last := time.Now()
	for {
		if err := pause(ctx, watchInterval); err != nil {
			return err
		}
		evs, err := p.poll(ctx, c)
		if err != nil {
			return orContext(ctx, err)
		}
		for _, ev := range evs {
			if err := send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
				return err
			}
			last = time.Now()
		}
		if time.Since(last) >= ping {
			ka := &filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Keepalive{Keepalive: &filesystem.WatchDirResponse_KeepAlive{}}}
			if err := send(ka); err != nil {
				return err
			}
			last = time.Now()
		}
	}
}
