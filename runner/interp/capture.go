package interp

import (
	"bytes"
	"io"
	"sync"
)

// output is what one cell wrote to one stream: the first limit bytes and
// how many there were in all.
type output struct {
	data  []byte
	total int64
}

func (o *output) add(p []byte, limit int) {
	o.total += int64(len(p))
	if room := limit - len(o.data); room > 0 {
		o.data = append(o.data, p[:min(room, len(p))]...)
	}
}

func (o output) truncated() bool { return o.total > int64(len(o.data)) }

// capture reads one of the interpreter's output pipes (fd 1 or fd 2) for
// the interpreter's whole life and splits what it reads into cells at the
// fences the driver writes after each cell. Reading never stops, so the
// interpreter never blocks on a full pipe, and what is beyond the cap is
// counted and dropped. Output written between cells (by a thread or a
// child process of an earlier cell) goes to the next cell.
type capture struct {
	limit int

	mu     sync.Mutex
	cur    output        // read since the last fence
	done   *output       // the armed cell's output, once its fence arrived
	fence  []byte        // the armed cell's fence; nil when none is armed
	held   []byte        // a tail of cur that may be the start of the fence
	fenced chan struct{} // closed when the armed cell's fence arrives
	eof    chan struct{} // closed when the pipe is at end of file or closed
}

func newCapture(limit int) *capture {
	return &capture{limit: limit, eof: make(chan struct{})}
}

// run reads r until it fails; it is the capture's only reader.
func (c *capture) run(r io.Reader) {
	defer close(c.eof)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.feed(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// arm starts a cell whose output ends at fence, and returns the channel
// closed when the fence arrives.
func (c *capture) arm(fence []byte) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fence, c.done, c.fenced = fence, nil, make(chan struct{})
	return c.fenced
}

// feed adds p to the current cell's output, cutting it at the fence.
func (c *capture) feed(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fence == nil {
		c.cur.add(p, c.limit)
		return
	}
	data := append(c.held, p...)
	c.held = nil
	if i := bytes.Index(data, c.fence); i >= 0 {
		c.cur.add(data[:i], c.limit)
		done, rest := c.cur, data[i+len(c.fence):]
		c.done, c.cur, c.fence = &done, output{}, nil
		close(c.fenced)
		c.cur.add(rest, c.limit)
		return
	}
	keep := len(data) - fencePrefix(data, c.fence)
	c.cur.add(data[:keep], c.limit)
	c.held = append([]byte(nil), data[keep:]...)
}

// take ends the armed cell and returns its output: up to its fence when
// the fence arrived, otherwise everything read so far.
func (c *capture) take() output {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		o := *c.done
		c.done = nil
		return o
	}
	c.cur.add(c.held, c.limit)
	o := c.cur
	c.cur, c.held, c.fence = output{}, nil, nil
	return o
}

// fencePrefix returns the length of the longest suffix of data that is a
// proper prefix of fence.
func fencePrefix(data, fence []byte) int {
	for n := min(len(fence)-1, len(data)); n > 0; n-- {
		if bytes.HasSuffix(data, fence[:n]) {
			return n
		}
	}
	return 0
}
