package e2b

import (
	"context"
	"maps"
	"path/filepath"
	"slices"

	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// watchDepth is how deep a recursive watch looks: the deepest listing
// the runner makes.
const watchDepth = 20

// poller watches a directory, on runners without
// protocol.FeatureWatchEvents, by listing it and comparing each listing
// with the one before. It sees what changed between two polls, not each
// change: a file created and removed in between is never seen, and a
// rename is a REMOVE and a CREATE. At most maxListEntries entries are
// tracked; a bigger tree fails the poll.
type poller struct {
	path  string // as the client named it
	depth int
	entry bool // events carry the entry's description
	last  map[string]protocol.FileInfo
}

func newPoller(path string, recursive, entry bool) *poller {
	p := &poller{path: path, depth: 1, entry: entry}
	if recursive {
		p.depth = watchDepth
	}
	return p
}

// poll lists the directory and returns what changed since the previous
// poll; the first poll only takes the baseline.
func (p *poller) poll(ctx context.Context, c *protocol.Client) ([]*filesystem.FilesystemEvent, error) {
	l, err := listEntries(ctx, c, p.path, p.depth)
	if err != nil {
		return nil, err
	}
	now := make(map[string]protocol.FileInfo, len(l.Entries))
	for _, f := range l.Entries {
		now[f.Path] = f
	}
	var evs []*filesystem.FilesystemEvent
	if p.last != nil {
		evs = p.diff(l.Path, now)
	}
	p.last = now
	return evs, nil
}

// diff lists the changes from p.last to now in path order, removals
// last. Names are relative to root, the watched directory, as envd's.
func (p *poller) diff(root string, now map[string]protocol.FileInfo) []*filesystem.FilesystemEvent {
	var evs []*filesystem.FilesystemEvent
	add := func(f protocol.FileInfo, t filesystem.EventType) {
		name, err := filepath.Rel(root, f.Path)
		if err != nil {
			name = f.Path
		}
		ev := &filesystem.FilesystemEvent{Name: name, Type: t}
		if p.entry && t != filesystem.EventType_EVENT_TYPE_REMOVE {
			ev.Entry = entryInfo(f)
		}
		evs = append(evs, ev)
	}
	for _, path := range slices.Sorted(maps.Keys(now)) {
		f, was := now[path], p.last[path]
		switch _, ok := p.last[path]; {
		case !ok:
			add(f, filesystem.EventType_EVENT_TYPE_CREATE)
		case f.Type != was.Type:
			add(was, filesystem.EventType_EVENT_TYPE_REMOVE)
			add(f, filesystem.EventType_EVENT_TYPE_CREATE)
		default:
			if f.Size != was.Size || !f.ModTime.Equal(was.ModTime) || f.Target != was.Target {
				add(f, filesystem.EventType_EVENT_TYPE_WRITE)
			}
			if f.Perm != was.Perm {
				add(f, filesystem.EventType_EVENT_TYPE_CHMOD)
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(p.last)) {
		if _, ok := now[path]; !ok {
			add(p.last[path], filesystem.EventType_EVENT_TYPE_REMOVE)
		}
	}
	return evs
}
