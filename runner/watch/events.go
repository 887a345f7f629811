package watch

import (
	"io/fs"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// eventOps maps inotify's masks to the operations of protocol.WatchEvent
// as fsnotify does: IN_CLOSE_WRITE is not a write of its own (the
// IN_MODIFY before it was), and a move is a rename of the old name and a
// creation of the new.
var eventOps = []struct {
	mask uint32
	op   protocol.WatchEventOp
}{
	{unix.IN_CREATE, protocol.WatchCreate},
	{unix.IN_MOVED_TO, protocol.WatchCreate},
	{unix.IN_MODIFY, protocol.WatchWrite},
	{unix.IN_ATTRIB, protocol.WatchChmod},
	{unix.IN_MOVED_FROM, protocol.WatchRename},
	{unix.IN_DELETE, protocol.WatchRemove},
}

// events records ev as named events of the watched directories it falls
// in, and, in a recursive watch, watches a directory that appeared.
func (r *run) events(ev rawEvent) {
	if ev.name == "" {
		return // the directory itself: its parent's watch (if any) names it
	}
	dir := ev.mask&unix.IN_ISDIR != 0
	for _, in := range r.byWD[ev.wd] {
		if in.name != "" {
			continue // a file's interest: its flags say enough
		}
		name := path.Join(in.prefix, ev.name)
		for _, o := range eventOps {
			if ev.mask&o.mask != 0 {
				r.d.add(change{target: in.target, entries: true, events: []protocol.WatchEvent{{Name: name, Op: o.op, Dir: dir}}})
			}
		}
		if in.recursive && dir && ev.mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
			sub := interest{target: in.target, prefix: name, dir: filepath.Join(in.dir, ev.name), recursive: true}
			if r.add(sub) == nil {
				r.walk(sub, true)
			}
		}
	}
}

// walk watches the subdirectories of in's directory, up to
// protocol.MaxWatchDirs directories in all. With created, each entry it
// finds is reported created: in a directory that just appeared they
// came before its watch could see them (one made in between may be
// reported twice).
func (r *run) walk(in interest, created bool) {
	root, base := in.dir, in.prefix
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil // gone meanwhile, or unreadable: nothing to watch
		}
		rel, _ := filepath.Rel(root, p)
		name := path.Join(base, filepath.ToSlash(rel))
		if created {
			r.d.add(change{target: in.target, entries: true, events: []protocol.WatchEvent{{Name: name, Op: protocol.WatchCreate, Dir: d.IsDir()}}})
		}
		if !d.IsDir() {
			return nil
		}
		if r.add(interest{target: in.target, prefix: name, dir: p, recursive: true}) == errTooMany {
			return fs.SkipAll
		}
		return nil
	})
}
