package egress

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

var (
	errBudget = errors.New("the sandbox's egress byte budget per minute is spent")
	errIdle   = errors.New("idle timeout")
)

// halfClosedIdle is the idle timeout of a connection one side of which
// has finished sending. A client that closed its socket entirely looks
// exactly like one that only half-closed it, and a keep-alive server
// then sends nothing more: without this, every such connection would
// hold one of the sandbox's connection slots for the full idle timeout.
// A half-close that still gets its answer (a request/response protocol
// over `runner connect`) gets it well within this.
const halfClosedIdle = 5 * time.Second

// meter counts what crosses a connection and enforces the gate's byte
// budget and idle timeout on it.
type meter struct {
	gate *Gate
	up   atomic.Int64 // sandbox → destination
	down atomic.Int64 // destination → sandbox
	last atomic.Int64 // unix nanoseconds of the last byte moved
	// halfClosed is set once one direction has ended cleanly.
	halfClosed atomic.Bool

	mu     sync.Mutex
	reason error // why the connection was cut, if it was
}

func (m *meter) touch() { m.last.Store(time.Now().UnixNano()) }

// cut records why the connection ends early; the first reason wins.
func (m *meter) cut(err error) {
	m.mu.Lock()
	if m.reason == nil {
		m.reason = err
	}
	m.mu.Unlock()
}

func (m *meter) cutReason() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reason
}

// meteredReader spends the budget for what it reads.
type meteredReader struct {
	r     io.Reader
	m     *meter
	count *atomic.Int64
}

func (r meteredReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.m.touch()
		r.count.Add(int64(n))
		if !r.m.gate.budget.take(n) {
			r.m.cut(errBudget)
			return n, errBudget
		}
	}
	return n, err
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// pipe moves bytes between the sandbox's stream and the destination
// (both ways, or only down when up is false) until every direction ends,
// or one fails, or the meter cuts the connection. A direction that ends
// cleanly half-closes the other side's writes, so a client that finished
// sending still gets the reply.
func pipe(stream, dest net.Conn, m *meter, idle time.Duration, up bool) {
	m.touch()
	done := make(chan struct{})
	defer close(done)
	go watchIdle(m, idle, done, stream, dest)
	var wg sync.WaitGroup
	wg.Add(1)
	closeBoth := func() { _ = stream.Close(); _ = dest.Close() }
	half := func(dst net.Conn, src io.Reader) {
		defer wg.Done()
		buf := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(buf)
		if _, err := io.CopyBuffer(dst, src, *buf); err != nil {
			closeBoth()
			return
		}
		// Half-close where the other side can see it; where it
		// cannot, end the connection rather than leave it hanging.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
			m.halfClosed.Store(true)
		} else {
			closeBoth()
		}
	}
	if up {
		wg.Add(1)
		go half(dest, meteredReader{stream, m, &m.up})
	}
	go half(stream, meteredReader{dest, m, &m.down})
	wg.Wait()
	closeBoth()
}

// watchIdle closes both ends once nothing has moved for idle, or for
// halfClosedIdle once one direction has ended.
func watchIdle(m *meter, idle time.Duration, done <-chan struct{}, conns ...net.Conn) {
	tick := time.NewTicker(max(min(idle, halfClosedIdle)/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		limit := idle
		if m.halfClosed.Load() {
			limit = min(idle, halfClosedIdle)
		}
		if time.Since(time.Unix(0, m.last.Load())) >= limit {
			m.cut(errIdle)
			for _, c := range conns {
				_ = c.Close()
			}
			return
		}
	}
}
