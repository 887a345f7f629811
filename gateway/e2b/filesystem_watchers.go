package e2b

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Bounds on the watchers CreateWatcher makes. A streamed watcher (on a
// runner that reports changes, see eventWatch) keeps one runner watch
// and at most maxWatcherEvents events not yet fetched; a polled one
// holds only its last listing (at most maxListEntries entries) and runs
// nothing between GetWatcherEvents calls, which poll. One not polled for
// watcherIdle is dropped, so a client that forgets RemoveWatcher does
// not make the gateway hold it for ever.
const (
	maxWatchersPerSandbox = 16
	maxWatchers           = 1024
	maxWatcherEvents      = 4096
	watcherIdle           = 10 * time.Minute
)

// watcher is one watcher of a sandbox, streamed or polled.
type watcher struct {
	sandbox string
	mu      sync.Mutex // one poll at a time; guards p and what follows
	p       *poller    // nil for a streamed watcher
	events  []*filesystem.FilesystemEvent
	dropped int   // events not kept, beyond maxWatcherEvents
	err     error // why a streamed watcher's stream ended
	// Guarded by watcherSet.mu: when it was last used, and what ends it.
	used time.Time
	stop func()
}

// watcherSet holds the watchers of every sandbox, by id.
type watcherSet struct {
	mu sync.Mutex
	m  map[string]*watcher
}

func newWatcherSet() *watcherSet { return &watcherSet{m: map[string]*watcher{}} }

// add keeps w and returns its id, or ErrQuota when too many are kept.
func (ws *watcherSet) add(w *watcher, now time.Time) (string, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.sweep(now)
	n := 0
	for _, o := range ws.m {
		if o.sandbox == w.sandbox {
			n++
		}
	}
	if n >= maxWatchersPerSandbox || len(ws.m) >= maxWatchers {
		return "", fmt.Errorf("too many watchers (at most %d per sandbox); remove one with RemoveWatcher, or use watchDir's stream: %w", maxWatchersPerSandbox, ErrQuota)
	}
	id := rand.Text()
	w.used = now
	ws.m[id] = w
	return id, nil
}

// forget drops id and ends its watcher; ws.mu is held.
func (ws *watcherSet) forget(id string) {
	if w := ws.m[id]; w != nil && w.stop != nil {
		w.stop()
	}
	delete(ws.m, id)
}

// get returns sandbox's watcher id and marks it used.
func (ws *watcherSet) get(sandboxID, id string, now time.Time) (*watcher, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.sweep(now)
	w, ok := ws.m[id]
	if !ok || w.sandbox != sandboxID {
		return nil, fmt.Errorf("no watcher %q in this sandbox (watchers not polled for %s are dropped); create one with CreateWatcher: %w", id, watcherIdle, sandbox.ErrNotFound)
	}
	w.used = now
	return w, nil
}

// remove drops sandbox's watcher id.
func (ws *watcherSet) remove(sandboxID, id string, now time.Time) error {
	if _, err := ws.get(sandboxID, id, now); err != nil {
		return err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.forget(id)
	return nil
}

// sweep drops the watchers idle for watcherIdle; ws.mu is held.
func (ws *watcherSet) sweep(now time.Time) {
	for id, w := range ws.m {
		if now.Sub(w.used) > watcherIdle {
			ws.forget(id)
		}
	}
}

// CreateWatcher starts a watcher: streamed when the runner reports
// changes, else polled, its baseline listing taken now.
// GetWatcherEvents reports the changes since the call before.
func (s *filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[filesystem.CreateWatcherRequest]) (*connect.Response[filesystem.CreateWatcherResponse], error) {
	m := req.Msg
	resp := &filesystem.CreateWatcherResponse{}
	op := Op{Name: "filesystem.CreateWatcher", Scope: auth.ScopeFilesRead, ReadOnly: true,
		Summary: map[string]any{"path": m.GetPath(), "recursive": m.GetRecursive()}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		w := &watcher{sandbox: req.Header().Get(headerSandboxID)}
		if streamsEvents(c) {
			ew := eventWatch{path: m.GetPath(), recursive: m.GetRecursive(), entry: m.GetIncludeEntry()}
			if err := s.stream(ctx, c, w, ew); err != nil {
				return err
			}
		} else {
			w.p = newPoller(m.GetPath(), m.GetRecursive(), m.GetIncludeEntry())
			if _, err := w.p.poll(ctx, c); err != nil {
				return err
			}
		}
		id, err := s.watchers.add(w, time.Now())
		if err != nil && w.stop != nil {
			w.stop()
		}
		resp.WatcherId = id
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// GetWatcherEvents returns a watcher's events since the call before.
func (s *filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[filesystem.GetWatcherEventsRequest]) (*connect.Response[filesystem.GetWatcherEventsResponse], error) {
	id := req.Msg.GetWatcherId()
	resp := &filesystem.GetWatcherEventsResponse{}
	op := Op{Name: "filesystem.GetWatcherEvents", Scope: auth.ScopeFilesRead, ReadOnly: true, Summary: map[string]any{"watcher": id}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		w, err := s.watchers.get(req.Header().Get(headerSandboxID), id, time.Now())
		if err != nil {
			return err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.p != nil {
			resp.Events, err = w.p.poll(ctx, c)
			return err
		}
		return s.take(w, id, resp)
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// RemoveWatcher drops a watcher.
func (s *filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[filesystem.RemoveWatcherRequest]) (*connect.Response[filesystem.RemoveWatcherResponse], error) {
	id := req.Msg.GetWatcherId()
	op := Op{Name: "filesystem.RemoveWatcher", Scope: auth.ScopeFilesRead, ReadOnly: true, Summary: map[string]any{"watcher": id}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		return s.watchers.remove(req.Header().Get(headerSandboxID), id, time.Now())
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.RemoveWatcherResponse{}), nil
}
