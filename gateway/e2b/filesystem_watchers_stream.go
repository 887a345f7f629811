package e2b

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// stream starts w's runner watch, which outlives the request that made
// it (on the sandbox's runner connection, until the watcher is removed
// or dropped), and returns once it is set up.
func (s *filesystemService) stream(ctx context.Context, c *protocol.Client, w *watcher, ew eventWatch) error {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stop = cancel
	ready := make(chan error, 1)
	go func() {
		err := ew.run(wctx, c, func() error { ready <- nil; return nil }, w.push)
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		select {
		case ready <- err:
		default: // it was set up; the error waits for GetWatcherEvents
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			cancel()
		}
		return err
	case <-ctx.Done():
		cancel()
		return ctx.Err()
	}
}

// push keeps evs for GetWatcherEvents, up to maxWatcherEvents.
func (w *watcher) push(evs []*filesystem.FilesystemEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := max(maxWatcherEvents-len(w.events), 0)
	if len(evs) > room {
		w.dropped += len(evs) - room
		evs = evs[:room]
	}
	w.events = append(w.events, evs...)
	return nil
}

// take moves a streamed watcher's events into resp; w.mu is held. A
// stream that ended is an error once its events are fetched.
func (s *filesystemService) take(w *watcher, id string, resp *filesystem.GetWatcherEventsResponse) error {
	resp.Events, w.events = w.events, nil
	if w.dropped > 0 {
		s.a.log.Warn("e2b watcher dropped events not fetched in time", "sandbox_id", w.sandbox, "watcher", id, "dropped", w.dropped)
		w.dropped = 0
	}
	if len(resp.Events) == 0 && w.err != nil {
		return fmt.Errorf("watcher %s stopped: %w; create a new one with CreateWatcher", id, w.err)
	}
	return nil
}
