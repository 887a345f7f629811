package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// maxEntryStats bounds the file.stat calls one report of a watch makes
// for include_entry; events beyond it carry no entry.
const maxEntryStats = 64

// watchDebounceMs is the quiet period of the runner's watch for envd's:
// short, because every event is reported by name anyway and the SDKs'
// callers expect them promptly.
const watchDebounceMs = 50

// eventTypes maps the runner's watch operations to envd's, which name
// them as fsnotify does (a rename: RENAME of the old name, CREATE of the
// new).
var eventTypes = map[protocol.WatchEventOp]filesystem.EventType{
	protocol.WatchCreate: filesystem.EventType_EVENT_TYPE_CREATE,
	protocol.WatchWrite:  filesystem.EventType_EVENT_TYPE_WRITE,
	protocol.WatchRemove: filesystem.EventType_EVENT_TYPE_REMOVE,
	protocol.WatchRename: filesystem.EventType_EVENT_TYPE_RENAME,
	protocol.WatchChmod:  filesystem.EventType_EVENT_TYPE_CHMOD,
}

// streamsEvents says whether c's runner reports changes by name
// (protocol.FeatureWatchEvents); older runners are polled.
func streamsEvents(c *protocol.Client) bool { return c.Supports(protocol.FeatureWatchEvents) }

// eventWatch is one directory watched with the runner's watch operation.
type eventWatch struct {
	path      string // as the client named it
	recursive bool   // subdirectories too, as they appear (up to protocol.MaxWatchDirs)
	entry     bool   // events carry the entry's description
}

// run watches until ctx ends or emit fails, calling ready once the
// watch is set up (so that every change after it is reported) and emit
// with each report's events, in order.
func (w eventWatch) run(ctx context.Context, c *protocol.Client, ready func() error, emit func([]*filesystem.FilesystemEvent) error) error {
	root, err := watchRoot(ctx, c, w.path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failed error // emit's or ready's error, which ends the watch
	started := false
	req := protocol.WatchRequest{Paths: []string{root}, DebounceMs: watchDebounceMs, Events: true, Recursive: w.recursive}
	_, err = c.Stream(ctx, protocol.OpWatch, req, func(ev protocol.Event) {
		var cs protocol.WatchChanges
		if failed != nil || ev.Type != protocol.EventChange || json.Unmarshal(ev.Result, &cs) != nil {
			return
		}
		if !started {
			started, failed = true, ready()
		} else if evs := w.translate(ctx, c, root, cs); len(evs) > 0 {
			failed = emit(evs)
		}
		if failed != nil {
			cancel()
		}
	})
	if failed != nil {
		return failed
	}
	return orContext(ctx, err)
}

// watchRoot resolves the directory to watch, refusing anything else as
// envd does.
func watchRoot(ctx context.Context, c *protocol.Client, p string) (string, error) {
	f, err := statEntry(ctx, c, p)
	if err != nil {
		return "", err
	}
	if f.Type != protocol.TypeDir {
		return "", connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s is a %s, not a directory; watch its directory", f.Path, f.Type))
	}
	return f.Path, nil
}

// translate turns one report into envd's events, names relative to root.
func (w eventWatch) translate(ctx context.Context, c *protocol.Client, root string, cs protocol.WatchChanges) []*filesystem.FilesystemEvent {
	var out []*filesystem.FilesystemEvent
	stats := 0
	for _, ch := range cs.Changes {
		for _, e := range ch.Events {
			ev := &filesystem.FilesystemEvent{Name: e.Name, Type: eventTypes[e.Op]}
			if w.entry && e.Op != protocol.WatchRemove && e.Op != protocol.WatchRename && stats < maxEntryStats {
				stats++
				// The entry as it is now: gone already, it has none.
				if f, err := statEntry(ctx, c, path.Join(root, e.Name)); err == nil {
					ev.Entry = entryInfo(f)
				}
			}
			out = append(out, ev)
		}
	}
	return out
}
