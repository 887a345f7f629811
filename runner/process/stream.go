package process

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

const (
	chunkSize = 32 << 10 // one read; sent as soon as it arrives
	// drainWait is how long the output readers may take to reach EOF after
	// the tree has been killed. Normally they do at once; a pipe still held
	// by a process that escaped the sweep would otherwise block them.
	drainWait = 2 * time.Second
)

// readChunks reads r until EOF or error, passing each chunk to fn, which
// must not keep it. It returns the error that ended the reading (io.EOF at
// the normal end).
func readChunks(r *os.File, fn func([]byte)) error {
	buf := make([]byte, chunkSize)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			fn(buf[:n])
		}
		if err != nil {
			return err
		}
	}
}

// capped counts one stream of a foreground call.
type capped struct {
	total     int64 // bytes produced
	truncated bool  // some were dropped
}

// pump streams r to send as events of type typ, up to limit bytes; what is
// beyond is read and dropped, never buffered, so memory stays bounded
// whatever the process writes.
func pump(r *os.File, typ protocol.EventType, limit int64, send func(protocol.Event)) capped {
	var c capped
	sent := int64(0)
	err := readChunks(r, func(b []byte) {
		c.total += int64(len(b))
		if k := min(int64(len(b)), limit-sent); k > 0 {
			send(protocol.Event{Type: typ, Data: bytes.Clone(b[:k])})
			sent += k
		}
	})
	// A deadline means drain gave up on a pipe held outside the tree:
	// output may be missing.
	c.truncated = c.total > sent || errors.Is(err, os.ErrDeadlineExceeded)
	return c
}

// feed writes data to the process's stdin and closes it, so the process
// sees EOF after the data.
func feed(w *os.File, data []byte) {
	defer w.Close()
	_, _ = w.Write(data) // EPIPE: the process exited or closed stdin without reading it all
}

// drain waits for the goroutines reading (and writing) p's pipes. Once the
// tree is dead every end held by the tree is closed and they finish at
// once; if they have not after drainWait, a process outside the tree holds
// a pipe, and deadlines in the past end them.
func drain(p *proc, pipes *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { pipes.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(drainWait):
	}
	now := time.Now()
	_ = p.stdout.SetReadDeadline(now)
	_ = p.stderr.SetReadDeadline(now)
	if p.stdin != nil {
		_ = p.stdin.SetWriteDeadline(now)
	}
	<-done
}
