package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Masks of the directory watches: what a change of the entries is, and
// what a change of an entry's content is.
const (
	entriesMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO
	contentMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB
	selfMask    = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	watchMask   = entriesMask | contentMask | selfMask | unix.IN_ONLYDIR
)

// Watcher serves watch requests for one workspace.
type Watcher struct {
	workspace string
}

// New returns a Watcher that resolves relative paths against workspace.
func New(workspace string) *Watcher { return &Watcher{workspace: workspace} }

// interest is one watched path as a directory watch sees it: name is the
// entry that path is ("" when the path is the directory itself). A
// recursive watch's subdirectories are interests too, with their prefix
// (their path relative to the watched directory) and dir (absolute).
type interest struct {
	target    int // index in the request's paths
	name      string
	prefix    string
	dir       string
	recursive bool
}

// Run watches req's paths until ctx ends, calling report with what
// changed each time the file system has been quiet for the debounce (or
// changes have kept coming for protocol.WatchMaxDelay). It returns nil
// when ctx ends, and an error when the watch cannot be set up.
func (w *Watcher) Run(ctx context.Context, req protocol.WatchRequest, report func(protocol.WatchChanges)) error {
	if err := check(req); err != nil {
		return err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "watch: start inotify: %v; the sandbox may be at its inotify instance limit", err)
	}
	// A non-blocking descriptor makes the os.File pollable, so closing it
	// ends a Read in progress: that is how a cancelled watch stops.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	r := &run{fd: fd, req: req, byWD: map[int32][]interest{}, d: newDebouncer(req)}
	for i, p := range req.Paths {
		in := w.place(i, p, req.Events && req.Recursive)
		if err := r.add(in); err != nil {
			return protocol.Errorf(protocol.CodeNotFound, "watch %q: %v; watch a path whose directory exists", p, err)
		}
		if in.recursive {
			r.walk(in, false)
		}
	}
	if req.Events {
		report(protocol.WatchChanges{Changes: []protocol.WatchChange{}})
	}
	events := make(chan []rawEvent, 16)
	go readEvents(f, events)
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case evs, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return protocol.Errorf(protocol.CodeInternal, "watch: inotify stopped unexpectedly")
			}
			for _, ev := range evs {
				r.handle(ev)
			}
		case <-r.d.timer():
			report(r.d.flush(req.Paths))
		}
	}
}

// run is the state of one Run: its inotify descriptor, what each watch
// descriptor stands for, and the changes not yet reported.
type run struct {
	fd   int
	req  protocol.WatchRequest
	byWD map[int32][]interest
	d    *debouncer
}

// errTooMany: a recursive watch is at protocol.MaxWatchDirs.
var errTooMany = errors.New("too many directories")

// add watches in's directory for in, once. A recursive watch's
// subdirectories count against protocol.MaxWatchDirs.
func (r *run) add(in interest) error {
	if in.prefix != "" && len(r.byWD) >= protocol.MaxWatchDirs+len(r.req.Paths) {
		return errTooMany
	}
	wd, err := unix.InotifyAddWatch(r.fd, in.dir, watchMask)
	if err != nil {
		return err
	}
	if !slices.Contains(r.byWD[int32(wd)], in) {
		r.byWD[int32(wd)] = append(r.byWD[int32(wd)], in)
	}
	return nil
}

// handle records what one inotify event changed.
func (r *run) handle(ev rawEvent) {
	r.d.add(match(r.byWD, ev, len(r.req.Paths))...)
	if ev.mask&unix.IN_IGNORED != 0 {
		delete(r.byWD, ev.wd) // the directory is gone, and so its watch
		return
	}
	if r.req.Events {
		r.events(ev)
	}
}

// check refuses requests outside the bounds.
func check(req protocol.WatchRequest) error {
	switch {
	case len(req.Paths) == 0:
		return protocol.Errorf(protocol.CodeInvalid, "watch: no paths; name at least one file or directory")
	case len(req.Paths) > protocol.MaxWatchPaths:
		return protocol.Errorf(protocol.CodeInvalid, "watch: %d paths is above the limit of %d per sandbox; watch fewer (a directory covers its entries)", len(req.Paths), protocol.MaxWatchPaths)
	case req.DebounceMs < 0:
		return protocol.Errorf(protocol.CodeInvalid, "watch: debounce_ms %d is negative", req.DebounceMs)
	}
	return nil
}

// place returns the interest of path p, with the directory that watches it:
// a directory watches itself (and, if recursive, its subdirectories); a file, or a path that does not exist yet,
// is watched from its parent.
func (w *Watcher) place(i int, p string, recursive bool) interest {
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.workspace, p)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return interest{target: i, dir: abs, recursive: recursive}
	}
	return interest{target: i, name: filepath.Base(abs), dir: filepath.Dir(abs)}
}

// match turns one inotify event into the changes of the watched paths it
// concerns. A queue overflow (wd -1) may have lost anything, so every
// path is reported changed both ways, and its events lost.
func match(byWD map[int32][]interest, ev rawEvent, n int) []change {
	if ev.mask&unix.IN_Q_OVERFLOW != 0 {
		out := make([]change, n)
		for i := range out {
			out[i] = change{target: i, entries: true, content: true, lost: true}
		}
		return out
	}
	var out []change
	for _, in := range byWD[ev.wd] {
		switch {
		case ev.name == "" && ev.mask&selfMask != 0:
			out = append(out, change{target: in.target, entries: true})
		case in.name == "" && ev.name != "":
			out = append(out, change{target: in.target, entries: ev.mask&entriesMask != 0, content: ev.mask&contentMask != 0})
		case in.name != "" && in.name == ev.name:
			out = append(out, change{target: in.target, entries: ev.mask&entriesMask != 0, content: ev.mask&(contentMask|entriesMask) != 0})
		}
	}
	return out
}

// rawEvent is one decoded inotify event.
type rawEvent struct {
	wd   int32
	mask uint32
	name string
}

// readEvents decodes f's events onto out until f is closed, then closes out.
func readEvents(f *os.File, out chan<- []rawEvent) {
	defer close(out)
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			return
		}
		out <- decode(buf[:n])
	}
}

// decode splits a read of the inotify descriptor into events.
func decode(b []byte) []rawEvent {
	var out []rawEvent
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafePointer(b))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			break
		}
		name := b[unix.SizeofInotifyEvent:end]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		out = append(out, rawEvent{wd: ev.Wd, mask: ev.Mask, name: string(name)})
		b = b[end:]
	}
	return out
}

// debounceOf is the request's quiet period.
func debounceOf(req protocol.WatchRequest) time.Duration {
	if req.DebounceMs > 0 {
		return time.Duration(req.DebounceMs) * time.Millisecond
	}
	return protocol.WatchDebounce
}
