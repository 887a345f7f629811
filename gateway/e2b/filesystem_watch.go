package e2b

import (
	"context"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// watchInterval is how often a polled watch stream lists its directory.
const watchInterval = 300 * time.Millisecond

// WatchDir streams the changes in a directory until the client leaves
// or its deadline passes: each change as it happens with a runner that
// reports them (eventWatch), else found by polling (see poller). The
// start event goes out once the watch is set up (or the baseline
// taken), so that every change after the client saw it is reported.
func (s *filesystemService) WatchDir(ctx context.Context, req *connect.Request[filesystem.WatchDirRequest], stream *connect.ServerStream[filesystem.WatchDirResponse]) error {
	m := req.Msg
	op := Op{Name: "filesystem.WatchDir", Scope: auth.ScopeFilesRead, ReadOnly: true,
		Summary: map[string]any{"path": m.GetPath(), "recursive": m.GetRecursive()}}
	return s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		if streamsEvents(c) {
			w := eventWatch{path: m.GetPath(), recursive: m.GetRecursive(), entry: m.GetIncludeEntry()}
			return watchStream(ctx, c, w, keepaliveInterval(req.Header()), stream.Send)
		}
		p := newPoller(m.GetPath(), m.GetRecursive(), m.GetIncludeEntry())
		if _, err := p.poll(ctx, c); err != nil {
			return err
		}
		if err := stream.Send(watchStartEvent); err != nil {
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
			if err := send(watchKeepaliveEvent); err != nil {
				return err
			}
			last = time.Now()
		}
	}
}

// The events of WatchDir's stream that carry no change.
var (
	watchStartEvent     = &filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Start{Start: &filesystem.WatchDirResponse_StartEvent{}}}
	watchKeepaliveEvent = &filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Keepalive{Keepalive: &filesystem.WatchDirResponse_KeepAlive{}}}
)

// watchStream runs w, sending its start and events, and a keepalive
// whenever nothing went out for ping, one send at a time.
func watchStream(ctx context.Context, c *protocol.Client, w eventWatch, ping time.Duration, send func(*filesystem.WatchDirResponse) error) error {
	var mu sync.Mutex
	last, started := time.Now(), false
	sendLocked := func(r *filesystem.WatchDirResponse) error {
		mu.Lock()
		defer mu.Unlock()
		last, started = time.Now(), true
		return send(r)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // no send after the handler returns
	defer cancel()
	wg.Go(func() {
		t := time.NewTicker(ping / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			due := started && time.Since(last) >= ping
			mu.Unlock()
			if due && sendLocked(watchKeepaliveEvent) != nil {
				cancel()
			}
		}
	})
	return w.run(ctx, c, func() error { return sendLocked(watchStartEvent) }, func(evs []*filesystem.FilesystemEvent) error {
		for _, ev := range evs {
			if err := sendLocked(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
				return err
			}
		}
		return nil
	})
}
