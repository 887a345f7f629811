package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
)

// watchHub keeps one runner watch stream (protocol.OpWatch) per sandbox
// that has subscribers, and fans its changes out to them. A subscriber
// is a legacy session (keyed by its id) or a subscriptions/listen stream
// (keyed by its mcp-go session); it only ever holds subscriptions to
// sandboxes its principal may use, checked when it subscribes, so a
// sandbox's changes reach only its owner.
type watchHub struct {
	log *slog.Logger
	mu  sync.Mutex
	by  map[string]*sandboxWatch // by sandbox id
}

// sandboxWatch is one sandbox's stream and subscribers.
type sandboxWatch struct {
	b      *fleet.Box
	subs   map[any]*subscription
	paths  []string // what the running stream watches
	cancel context.CancelFunc
}

// subscription is what one subscriber wants of one sandbox.
type subscription struct {
	send        mcpapi.Notify
	uris        map[string]string // resource URI → runner path
	listChanged bool              // notifications/resources/list_changed for the workspace
}

func newWatchHub(log *slog.Logger) *watchHub {
	return &watchHub{log: log, by: map[string]*sandboxWatch{}}
}

// workspacePath is the runner path of the workspace itself.
const workspacePath = "."

// subscribe adds uri (path in b) to key's subscription, or only the
// workspace's list changes when uri is "". It fails, changing nothing,
// when the sandbox would watch more than protocol.MaxWatchPaths paths.
func (h *watchHub) subscribe(b *fleet.Box, key any, send mcpapi.Notify, uri, path string, listChanged bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.by[b.ID()]
	if w == nil {
		w = &sandboxWatch{b: b, subs: map[any]*subscription{}}
	}
	s := w.subs[key]
	if s == nil {
		s = &subscription{send: send, uris: map[string]string{}}
	}
	if uri != "" {
		if _, ok := s.uris[uri]; !ok && len(w.pathsWith(path)) > protocol.MaxWatchPaths {
			return fmt.Errorf("sandbox %s already watches %d paths, the limit; unsubscribe from some, or subscribe to their directory", b.ID(), protocol.MaxWatchPaths)
		}
		s.uris[uri] = path
	}
	s.listChanged = s.listChanged || listChanged
	w.subs[key] = s
	h.by[b.ID()] = w
	h.restart(w)
	return nil
}

// unsubscribe removes uri from key's subscriptions (every one of key's
// subscriptions when uri is "").
func (h *watchHub) unsubscribe(key any, uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, w := range h.by {
		s := w.subs[key]
		if s == nil {
			continue
		}
		delete(s.uris, uri)
		if uri == "" || len(s.uris) == 0 && !s.listChanged {
			delete(w.subs, key)
		}
		if len(w.subs) == 0 {
			w.cancel()
			delete(h.by, id)
			continue
		}
		h.restart(w)
	}
}

// pathsWith is the set of paths w watches with path added.
func (w *sandboxWatch) pathsWith(extra string) []string {
	var ps []string
	add := func(p string) {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	for _, s := range w.subs {
		for _, p := range s.uris {
			add(p)
		}
		if s.listChanged {
			add(workspacePath)
		}
	}
	if extra != "" {
		add(extra)
	}
	slices.Sort(ps)
	return ps
}

// restart starts w's stream again if its set of paths changed.
func (h *watchHub) restart(w *sandboxWatch) {
	ps := w.pathsWith("")
	if w.cancel != nil && slices.Equal(ps, w.paths) {
		return
	}
	if w.cancel != nil {
		w.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.paths, w.cancel = ps, cancel
	go h.stream(ctx, w, ps)
}

// stream runs the runner's watch of paths until ctx ends, and again
// after the runner connection is lost or the sandbox replaced (the
// workspace, and so the paths, outlive both). It gives up when the
// sandbox is gone, dropping its subscribers.
func (h *watchHub) stream(ctx context.Context, w *sandboxWatch, paths []string) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		rc, err := w.b.Connect(ctx)
		if errors.Is(err, fleet.ErrSandboxGone) {
			h.drop(w)
			return
		}
		if err == nil && !rc.Supports(protocol.FeatureWatch) {
			h.log.Warn("runner cannot watch files; resource subscriptions will not fire", "sandbox_id", w.b.ID())
			return
		}
		if err == nil {
			began := time.Now()
			_, err = rc.Stream(ctx, protocol.OpWatch, protocol.WatchRequest{Paths: paths}, func(ev protocol.Event) { h.deliver(w, ev) })
			if time.Since(began) > time.Minute {
				backoff = 100 * time.Millisecond // it ran well; a new loss starts over
			}
		}
		if ctx.Err() != nil {
			return
		}
		h.log.Debug("watch stream ended; re-establishing", "sandbox_id", w.b.ID(), "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// drop forgets w after its sandbox went.
func (h *watchHub) drop(w *sandboxWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by[w.b.ID()] == w {
		w.cancel()
		delete(h.by, w.b.ID())
	}
}

// deliver sends one report's notifications to w's subscribers.
func (h *watchHub) deliver(w *sandboxWatch, ev protocol.Event) {
	if ev.Type != protocol.EventChange {
		return
	}
	var cs protocol.WatchChanges
	if err := json.Unmarshal(ev.Result, &cs); err != nil {
		h.log.Warn("bad watch report from runner", "sandbox_id", w.b.ID(), "error", err)
		return
	}
	changed := map[string]protocol.WatchChange{}
	for _, c := range cs.Changes {
		changed[c.Path] = c
	}
	h.mu.Lock()
	subs := make([]*subscription, 0, len(w.subs))
	for _, s := range w.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		h.mu.Lock()
		var uris []string
		for uri, p := range s.uris {
			if _, ok := changed[p]; ok {
				uris = append(uris, uri)
			}
		}
		list := s.listChanged && changed[workspacePath].Entries
		h.mu.Unlock()
		slices.Sort(uris)
		for _, uri := range uris {
			s.send(mcpapi.MethodResourceUpdated, map[string]any{"uri": uri})
		}
		if list {
			s.send(mcpapi.MethodResourcesListChanged, nil)
		}
	}
}

// subscribers is how many subscribers sandbox id's watch has.
func (h *watchHub) subscribers(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.by[id]; w != nil {
		return len(w.subs)
	}
	return 0
}
