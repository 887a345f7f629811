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

// add counts p and keeps what fits under limit, which it returns.
func (o *output) add(p []byte, limit int) []byte {
	o.total += int64(len(p))
	room := limit - len(o.data)
	if room <= 0 {
		return nil
	}
	kept := p[:min(room, len(p))]
	o.data = append(o.data, kept...)
	return kept
}

func (o output) truncated() bool { return o.total > int64(len(o.data)) }

// capture reads one of the interpreter's output pipes (fd 1 or fd 2) for
// the interpreter's whole life and splits what it reads into cells at the
// fences the driver writes after each cell. Reading never stops, so the
// interpreter never blocks on a full pipe, and what is beyond the cap is
// counted and dropped. Output written between cells (by a thread or a
// child process of an earlier cell) goes to the next cell.
//
// A streamed cell's output also goes to its sink as it is read, within
// the cap: the sink is called with the lock held, so everything before
// the fence has reached it before the fence is seen, and nothing reaches
// it after take.
type capture struct {
	limit int

	mu     sync.Mutex
	cur    output        // read since the last fence
	done   *output       // the armed cell's output, once its fence arrived
	fence  []byte        // the armed cell's fence; nil when none is armed
	held   []byte        // a tail of cur that may be the start of the fence
	fenced chan struct{} // closed when the armed cell's fence arrives
	sink   func([]byte)  // the armed cell's sink; nil when it is not streamed
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
// closed when the fence arrives. sink, when not nil, is given the cell's
// output as it is read, starting with what was read since the last
// cell; it must not keep the slice it is given.
func (c *capture) arm(fence []byte, sink func([]byte)) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fence, c.done, c.fenced, c.sink = fence, nil, make(chan struct{}), sink
	c.emit(c.cur.data)
	return c.fenced
}

// emit passes p to the armed cell's sink, if it has one.
func (c *capture) emit(p []byte) {
	if c.sink != nil && len(p) > 0 {
		c.sink(p)
	}
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
		c.emit(c.cur.add(data[:i], c.limit))
		done, rest := c.cur, data[i+len(c.fence):]
		c.done, c.cur, c.fence, c.sink = &done, output{}, nil, nil
		close(c.fenced)
		c.cur.add(rest, c.limit)
		return
	}
	keep := len(data) - fencePrefix(data, c.fence)
	c.emit(c.cur.add(data[:keep], c.limit))
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
	c.emit(c.cur.add(c.held, c.limit))
	o := c.cur
	c.cur, c.held, c.fence, c.sink = output{}, nil, nil, nil
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
