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
			fenced := c.arm([]byte(fence))
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
			c.arm([]byte("\x00next\x00"))
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
	c.arm([]byte("\x00f\x00"))
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
