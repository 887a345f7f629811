package audit

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Sink records audit events.
type Sink interface {
	// Append fills e's Seq, ID, Time, PrevHash and Hash, records it, and
	// returns only once the record is durable. On error nothing was
	// recorded and the caller must not perform the audited action.
	Append(ctx context.Context, e *Event) error
	// Close waits for queued appends and releases the log.
	Close() error
}

// Size limits of the file format.
const (
	// MaxRecordSize is the largest line, newline included, that Append
	// writes and Verify accepts.
	MaxRecordSize = 64 << 10
	// maxBatch bounds the bytes of one group commit, so the damage a crash
	// during a write can leave at the end of the file is bounded too.
	maxBatch = 1 << 20
	// maxQueue bounds the events taken from the queue at once.
	maxQueue = 512
)

var _ Sink = (*FileSink)(nil)

// FileSink is a Sink that appends hash-chained JSON lines to one file;
// create it with OpenFile. It is safe for concurrent use. One goroutine, started by OpenFile and
// ended by Close, owns the file and the chain state; Append hands it
// events and waits. Events that arrive while a write is in flight are
// written together with one fsync (group commit), in arrival order.
type FileSink struct {
	path string
	torn string
	reqs chan *request
	done chan struct{} // closed when run returns

	mu     sync.RWMutex // guards closed and sending on reqs
	closed bool

	durable atomic.Int64 // file size covered by the last successful fsync
	onSync  atomic.Pointer[func(time.Duration, int)]

	// Owned by run.
	f      file
	seq    uint64 // Seq of the last durable record
	last   string // Hash of the last durable record
	size   int64  // == durable, kept here for the writer
	broken error  // set when the file may end in a partial record
	buf    []byte
}

// file is the part of *os.File the writer uses.
type file interface {
	Write(b []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

type request struct {
	e    *Event
	done chan error
}

// Append records e; see Sink.Append. ctx is checked only before e is
// queued: once queued, Append waits for the write, so that it never
// reports failure for a record that was in fact written. The wait is
// bounded by one write and fsync.
//
// Append makes e's strings valid UTF-8 and cuts long summary values and
// error texts (see prepare); where that changes e.Summary,
// e.Principal.Scopes or e.Connection it replaces them with changed copies
// and never modifies the map, slice or Connection the caller passed.
// Errors wrap ErrInvalid (nothing to record), ErrUnavailable (the disk
// refused; the file was rolled back to its last durable record) or
// ErrClosed.
func (s *FileSink) Append(ctx context.Context, e *Event) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("append audit event: %w", err)
	}
	if err := prepare(e); err != nil {
		return err
	}
	r := &request{e: e, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.reqs <- r
	s.mu.RUnlock()
	return <-r.done
}

// Close waits for every queued Append to finish, then closes the file and
// releases its lock. Calling Close again does nothing.
func (s *FileSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("close audit log %s: %w", s.path, err)
	}
	return nil
}

// OnSync sets a function called after each successful group commit with
// its write-and-fsync time and the number of records it made durable (for
// metrics). It runs on the writer goroutine, so it must be quick.
func (s *FileSink) OnSync(f func(d time.Duration, records int)) { s.onSync.Store(&f) }

// TornTail returns the file to which OpenFile moved an incomplete last
// line it found (the trace of a crash during a write), or "" if the log
// ended cleanly. The gateway should report it to the operator.
func (s *FileSink) TornTail() string { return s.torn }

// run is the writer loop: it takes whatever is queued and commits it with
// one write and one fsync per maxBatch bytes.
func (s *FileSink) run() {
	defer close(s.done)
	var batch []*request
	for r := range s.reqs {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < maxQueue {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		for len(batch) > 0 {
			batch = s.commit(batch)
		}
	}
}

// commit chains, writes and syncs a prefix of batch of at most maxBatch
// bytes, answers those requests and returns the rest. The chain state
// advances only after the fsync succeeded, so a failed write leaves seq
// and hash where the file ends.
func (s *FileSink) commit(batch []*request) (rest []*request) {
	if s.broken != nil {
		for _, r := range batch {
			r.done <- s.broken
		}
		return nil
	}
	type sealed struct {
		r  *request
		ev Event
	}
	var ok []sealed
	buf := s.buf[:0]
	seq, prev := s.seq, s.last
	for i, r := range batch {
		ev := *r.e
		ev.Seq, ev.ID, ev.Time, ev.PrevHash = seq+1, newID(), time.Now().UTC(), prev
		line, err := seal(&ev)
		if err == nil && len(line) > MaxRecordSize {
			err = fmt.Errorf("%w: record of %d bytes exceeds %d; shorten the summary", ErrInvalid, len(line), MaxRecordSize)
		}
		if err != nil {
			r.done <- err
			continue
		}
		if len(buf)+len(line) > maxBatch {
			rest = batch[i:]
			break
		}
		seq, prev = ev.Seq, ev.Hash
		buf = append(buf, line...)
		ok = append(ok, sealed{r, ev})
	}
	s.buf = buf
	if len(ok) == 0 {
		return rest
	}
	began := time.Now()
	if err := s.write(buf); err != nil {
		for _, x := range ok {
			x.r.done <- err
		}
		return rest
	}
	if f := s.onSync.Load(); f != nil {
		(*f)(time.Since(began), len(ok))
	}
	s.seq, s.last = seq, prev
	s.size += int64(len(buf))
	s.durable.Store(s.size)
	for _, x := range ok {
		*x.r.e = x.ev
		x.r.done <- nil
	}
	return rest
}

// write appends buf and fsyncs. On failure it truncates the file back to
// the last durable record, so the next write continues a verifiable file
// and no record whose fsync failed stays behind half-known. The truncation
// is not synced on its own: the next successful fsync makes it durable
// with the next records, and if the host crashes first, OpenFile deals
// with what the failed write left (see OpenFile). If the truncation fails,
// the file may end in a partial line, so the sink is broken: every later
// Append fails until the gateway reopens the log and OpenFile repairs it.
func (s *FileSink) write(buf []byte) error {
	_, err := s.f.Write(buf)
	if err == nil {
		err = s.f.Sync()
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%w: append to audit log: %w", ErrUnavailable, err)
	if terr := s.f.Truncate(s.size); terr != nil {
		s.broken = fmt.Errorf("%w; roll back to %d bytes: %v; reopen the log to repair it", err, s.size, terr)
		return s.broken
	}
	return err
}

// newID returns a random (version 4) UUID.
func newID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails; see crypto/rand.Read
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
