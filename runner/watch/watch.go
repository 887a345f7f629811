package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
// entry that path is ("" when the path is the directory itself).
type interest struct {
	target int // index in the request's paths
	name   string
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
	byWD := map[int32][]interest{}
	for i, p := range req.Paths {
		dir, in := w.place(i, p)
		wd, err := unix.InotifyAddWatch(fd, dir, watchMask)
		if err != nil {
			return protocol.Errorf(protocol.CodeNotFound, "watch %q: %v; watch a path whose directory exists", p, err)
		}
		byWD[int32(wd)] = append(byWD[int32(wd)], in)
	}
	events := make(chan []rawEvent, 16)
	go readEvents(f, events)
	d := newDebouncer(req)
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
				d.add(match(byWD, ev, len(req.Paths))...)
			}
		case <-d.timer():
			report(d.flush(req.Paths))
		}
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

// place returns the directory that watches path p and what p is in it:
// a directory watches itself; a file, or a path that does not exist yet,
// is watched from its parent.
func (w *Watcher) place(i int, p string) (string, interest) {
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.workspace, p)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return abs, interest{target: i}
	}
	return filepath.Dir(abs), interest{target: i, name: filepath.Base(abs)}
}

// match turns one inotify event into the changes of the watched paths it
// concerns. A queue overflow (wd -1) may have lost anything, so every
// path is reported changed both ways.
func match(byWD map[int32][]interest, ev rawEvent, n int) []change {
	if ev.mask&unix.IN_Q_OVERFLOW != 0 {
		out := make([]change, n)
		for i := range out {
			out[i] = change{target: i, entries: true, content: true}
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
