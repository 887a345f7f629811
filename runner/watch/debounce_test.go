package watch

import (
	"reflect"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Many changes to a path before the timer fires are one report, with the
// flags of them all, in the order of the request.
func TestDebouncerMerges(t *testing.T) {
	d := newDebouncer(protocol.WatchRequest{})
	if d.timer() != nil {
		t.Fatal("timer armed with nothing pending")
	}
	for range 100 {
		d.add(change{target: 1, content: true})
	}
	d.add(change{target: 1, entries: true}, change{target: 0, content: true})
	if d.timer() == nil {
		t.Fatal("timer not armed with changes pending")
	}
	got := d.flush([]string{"a", "b"})
	want := []protocol.WatchChange{{Path: "a", Content: true}, {Path: "b", Entries: true, Content: true}}
	if !reflect.DeepEqual(got.Changes, want) {
		t.Fatalf("flush = %+v, want %+v", got.Changes, want)
	}
	if d.timer() != nil || len(d.flush([]string{"a", "b"}).Changes) != 0 {
		t.Fatal("changes left after flush")
	}
}

// A queue overflow may have lost any event: every path is reported.
func TestMatchOverflow(t *testing.T) {
	got := match(nil, rawEvent{wd: -1, mask: 0x4000 /* IN_Q_OVERFLOW */}, 3)
	if len(got) != 3 || !got[2].entries || !got[2].content {
		t.Fatalf("overflow = %+v", got)
	}
}
