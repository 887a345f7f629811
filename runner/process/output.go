package process

import (
	"context"
	"sync"

	"github.com/sandgate/sandgate/runner/protocol"
)

const defaultReadBytes = 256 << 10

// Output returns a background process's output from req.Offset, a position
// in its combined log of stdout and stderr: at most req.MaxBytes (default
// 256 KiB, at most the 1 MiB window) split into the two streams. Output
// older than the window is gone; Dropped says how much of it lay between
// req.Offset and what is returned. Reading from NextOffset continues
// without gaps or repeats; More says whether output is already waiting
// there.
//
// With req.WaitMs, a read at the end of a running process's output first
// waits (see awaitOutput); ctx ends that wait early with CodeCanceled.
func (m *Manager) Output(ctx context.Context, req protocol.ProcessOutputRequest) (protocol.ProcessOutput, error) {
	b, err := m.get(req.ID)
	if err != nil {
		return protocol.ProcessOutput{}, err
	}
	n := req.MaxBytes
	switch {
	case n < 0:
		return protocol.ProcessOutput{}, protocol.Errorf(protocol.CodeInvalid, "max_bytes must not be negative")
	case n == 0:
		n = defaultReadBytes
	}
	n = min(n, logWindow)
	if req.WaitMs < 0 {
		return protocol.ProcessOutput{}, protocol.Errorf(protocol.CodeInvalid, "wait_ms must not be negative; pass 0 to answer at once")
	}
	total := b.log.bytes()
	if req.Offset < 0 || req.Offset > total {
		return protocol.ProcessOutput{}, protocol.Errorf(protocol.CodeInvalid,
			"offset %d is outside the output (%d bytes so far); pass 0 or the next_offset of the last read", req.Offset, total)
	}
	if err := b.awaitOutput(ctx, req.Offset, waitFor(req.WaitMs)); err != nil {
		return protocol.ProcessOutput{}, err
	}
	stdout, stderr, from, total := b.log.read(req.Offset, n)
	next := from + int64(len(stdout)+len(stderr))
	return protocol.ProcessOutput{
		Process:    b.info(),
		Stdout:     stdout,
		Stderr:     stderr,
		Offset:     from,
		NextOffset: next,
		Dropped:    from - req.Offset,
		More:       next < total,
	}, nil
}

const (
	logWindow = 1 << 20 // output bytes a background process keeps
	// maxSegments bounds the bookkeeping: output that alternates between
	// stdout and stderr in tiny chunks needs a segment per chunk, and
	// beyond this many the oldest are dropped even within the window.
	maxSegments = 16 << 10
	maxSegment  = chunkSize // a segment grows by coalescing up to this
)

// outputLog is the combined output of a background process: stdout and
// stderr chunks in arrival order, each tagged with its stream, of which
// the last logWindow bytes are kept. Offsets count every byte ever logged,
// so a reader's offset stays meaningful while older output is dropped.
type outputLog struct {
	mu    sync.Mutex
	segs  []segment
	start int64 // offset of the first kept byte
	total int64 // bytes ever logged; the offset of the next byte
	// grew, when not nil, is closed (and forgotten) by the next add, to
	// wake the readers waiting for output beyond total.
	grew chan struct{}
}

type segment struct {
	stderr bool
	data   []byte
}

// add logs a chunk; it copies b.
func (l *outputLog) add(stderr bool, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
	l.total += int64(len(b))
	if n := len(l.segs); n > 0 && l.segs[n-1].stderr == stderr && len(l.segs[n-1].data)+len(b) <= maxSegment {
		l.segs[n-1].data = append(l.segs[n-1].data, b...)
	} else {
		l.segs = append(l.segs, segment{stderr: stderr, data: append([]byte(nil), b...)})
	}
	for len(l.segs) > 0 && (l.total-l.start > logWindow || len(l.segs) > maxSegments) {
		first := &l.segs[0]
		cut := int64(len(first.data))
		if len(l.segs) <= maxSegments {
			cut = min(cut, l.total-l.start-logWindow)
		}
		l.start += cut
		if cut < int64(len(first.data)) {
			first.data = first.data[cut:]
			break
		}
		l.segs[0] = segment{}
		l.segs = l.segs[1:]
	}
}

// read returns the kept output in [off, off+n) split by stream, the offset
// it actually starts at (later than off when older output was dropped),
// and the log's total.
func (l *outputLog) read(off, n int64) (stdout, stderr []byte, from, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from = min(max(off, l.start), l.total)
	end := min(from+n, l.total)
	stdout, stderr = []byte{}, []byte{}
	pos := l.start
	for _, s := range l.segs {
		if pos >= end {
			break
		}
		segEnd := pos + int64(len(s.data))
		if lo, hi := max(pos, from), min(segEnd, end); lo < hi {
			if s.stderr {
				stderr = append(stderr, s.data[lo-pos:hi-pos]...)
			} else {
				stdout = append(stdout, s.data[lo-pos:hi-pos]...)
			}
		}
		pos = segEnd
	}
	return stdout, stderr, from, l.total
}

// bytes returns the number of bytes ever logged.
func (l *outputLog) bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
