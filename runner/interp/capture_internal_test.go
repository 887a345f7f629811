package interp

import (
	"strings"
	"testing"
)

// TestCaptureFence feeds a cell's output with its fence split at every
// position, between and within chunks: the fence never shows, and what
// follows it goes to the next cell.
func TestCaptureFence(t *testing.T) {
	t.Parallel()
	const fence = "\x00sandgate-fence-0123\x00"
	stream := "before " + "\x00sand" + " partial " + fence + "after"
	for cut1 := 0; cut1 <= len(stream); cut1++ {
		for cut2 := cut1; cut2 <= len(stream); cut2++ {
			c := newCapture(1 << 20)
			fenced := c.arm([]byte(fence), nil)
			c.feed([]byte(stream[:cut1]))
			c.feed([]byte(stream[cut1:cut2]))
			c.feed([]byte(stream[cut2:]))
			select {
			case <-fenced:
			default:
				t.Fatalf("cuts %d,%d: fence not seen", cut1, cut2)
			}
			if got := string(c.take().data); got != "before \x00sand partial " {
				t.Fatalf("cuts %d,%d: cell output %q", cut1, cut2, got)
			}
			c.arm([]byte("\x00next\x00"), nil)
			if got := string(c.take().data); got != "after" {
				t.Fatalf("cuts %d,%d: next cell output %q", cut1, cut2, got)
			}
		}
	}
}

func TestCaptureCapAndUnfenced(t *testing.T) {
	t.Parallel()
	c := newCapture(10)
	c.feed([]byte("between cells "))
	c.arm([]byte("\x00f\x00"), nil)
	c.feed([]byte(strings.Repeat("y", 20) + "\x00"))
	o := c.take() // no fence came: everything so far, the held byte too
	if string(o.data) != "between ce" || o.total != 35 || !o.truncated() {
		t.Fatalf("got %q, total %d", o.data, o.total)
	}
	c.feed([]byte("late"))
	if o := c.take(); string(o.data) != "late" {
		t.Fatalf("after take: %q", o.data)
	}
}

// TestCaptureSink: an armed cell's sink gets what was read since the
// last cell, then its output as it is read, up to the fence and within
// the cap; nothing after the fence or after take.
func TestCaptureSink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before string   // read before the cell was armed
		feeds  []string // read while it runs
		limit  int
		want   []string // what the sink got
		next   string   // the next cell's output
	}{
		{name: "pieces up to the fence", feeds: []string{"a\n", "b", "c\n\x00f\x00late"}, limit: 100, want: []string{"a\n", "b", "c\n"}, next: "late"},
		{name: "output between cells first", before: "thread\n", feeds: []string{"x\x00f\x00"}, limit: 100, want: []string{"thread\n", "x"}},
		{name: "a held fence prefix that was not one", feeds: []string{"y\x00", "z\x00f\x00"}, limit: 100, want: []string{"y", "\x00z"}},
		{name: "the cap", feeds: []string{"12345", "6789", "more\x00f\x00"}, limit: 7, want: []string{"12345", "67"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCapture(tt.limit)
			c.feed([]byte(tt.before))
			var got []string
			c.arm([]byte("\x00f\x00"), func(p []byte) { got = append(got, string(p)) })
			for _, f := range tt.feeds {
				c.feed([]byte(f))
			}
			c.take()
			c.feed([]byte("after take"))
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("sink got %q, want %q", got, tt.want)
			}
			next := tt.next + "after take"
			if o := c.take(); string(o.data) != next[:min(tt.limit, len(next))] {
				t.Fatalf("next cell's output %q", o.data)
			}
		})
	}
}
