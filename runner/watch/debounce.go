package watch

import (
	"time"
	"unsafe"

	"github.com/sandgate/sandgate/runner/protocol"
)

// change is what one event says of one watched path.
type change struct {
	target           int
	entries, content bool
	events           []protocol.WatchEvent
	lost             bool
}

// debouncer gathers changes until the file system has been quiet for
// quiet, or changes have kept coming for protocol.WatchMaxDelay, so that
// a burst of writes (a build, an unpacked archive) is one report.
type debouncer struct {
	quiet   time.Duration
	pending map[int]change
	first   time.Time // when the oldest pending change came
	t       *time.Timer
}

func newDebouncer(req protocol.WatchRequest) *debouncer {
	return &debouncer{quiet: debounceOf(req), pending: map[int]change{}}
}

// add records changes and pushes the report back, within the max delay.
func (d *debouncer) add(cs ...change) {
	if len(cs) == 0 {
		return
	}
	now := time.Now()
	if len(d.pending) == 0 {
		d.first = now
	}
	for _, c := range cs {
		p := d.pending[c.target]
		p.target, p.entries, p.content, p.lost = c.target, p.entries || c.entries, p.content || c.content, p.lost || c.lost
		for _, ev := range c.events {
			p.events, p.lost = appendEvent(p.events, ev, p.lost)
		}
		d.pending[c.target] = p
	}
	wait := min(d.quiet, d.first.Add(protocol.WatchMaxDelay).Sub(now))
	if d.t == nil {
		d.t = time.NewTimer(wait)
	} else {
		d.t.Reset(wait)
	}
}

// timer fires when the pending changes are due; nil (never) when none are.
func (d *debouncer) timer() <-chan time.Time {
	if len(d.pending) == 0 || d.t == nil {
		return nil
	}
	return d.t.C
}

// flush returns the pending changes in the order of paths and forgets them.
func (d *debouncer) flush(paths []string) protocol.WatchChanges {
	out := protocol.WatchChanges{Changes: []protocol.WatchChange{}}
	for i, p := range paths {
		if c, ok := d.pending[i]; ok {
			out.Changes = append(out.Changes, protocol.WatchChange{Path: p, Entries: c.entries, Content: c.content, Events: c.events, Lost: c.lost})
		}
	}
	clear(d.pending)
	return out
}

// appendEvent adds ev to evs unless it repeats the last one (a large
// write is many IN_MODIFY) or evs is full, which lost then says.
func appendEvent(evs []protocol.WatchEvent, ev protocol.WatchEvent, lost bool) ([]protocol.WatchEvent, bool) {
	switch {
	case len(evs) > 0 && evs[len(evs)-1] == ev:
		return evs, lost
	case len(evs) >= protocol.MaxWatchEvents:
		return evs, true
	}
	return append(evs, ev), lost
}

// unsafePointer views the start of b as an inotify event header; decode
// has checked that b is long enough.
func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
