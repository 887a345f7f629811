package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// OpenFile opens (creating if needed) the JSONL audit log at path and
// continues its chain: the next record gets the Seq after the last record
// in the file and its Hash as PrevHash, so a restarted gateway extends the
// same chain. A new file is created with mode 0600 and missing parent
// directories with 0700; an existing file's mode is left alone.
//
// The file is locked (flock) for as long as the sink is open: a second
// gateway on the same file gets ErrUnavailable instead of forking the
// chain.
//
// Crash recovery: Append acknowledges records only after fsync, so what a
// crash (or a write failure the sink could not roll back) leaves beyond
// the acknowledged records is a prefix of one batch of whole lines: some
// complete records, which are valid and stay in the chain (the log may
// then record an action that was refused, never miss one that happened),
// and at most one incomplete line after the last newline. OpenFile copies
// that incomplete line, fsynced, to "<path>.torn-<offset>-<unixnano>"
// (see TornTail) and only then truncates the log to its last complete
// line: no byte is lost and the log itself stays verifiable. OpenFile
// checks that the last complete line is a sealed record (not the whole
// chain; use VerifyFile for that); if it is not, the damage is not a crash
// artifact, and OpenFile returns ErrCorrupt without touching the file.
func OpenFile(path string) (*FileSink, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("%w: create audit log directory: %w", ErrUnavailable, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: open audit log: %w", ErrUnavailable, err)
	}
	s, err := open(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	go s.run()
	return s, nil
}

// lockWait is how long open waits for the lock of a log another holder
// just released: a process that forks (any exec) holds a copy of every
// open file, and with it the lock, until the child execs, so a gateway
// restarted in the same process, or right after its predecessor exited,
// may find the lock held for a moment.
const lockWait = 2 * time.Second

func open(f *os.File, path string) (*FileSink, error) {
	err := lock(f)
	for deadline := time.Now().Add(lockWait); err != nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		err = lock(f)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: lock audit log %s (is another gateway using it?): %w", ErrUnavailable, path, err)
	}
	// Make the directory entry of a newly created log durable.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	s := &FileSink{path: path, f: f, reqs: make(chan *request, maxQueue), done: make(chan struct{})}
	if err := s.recover(f); err != nil {
		return nil, err
	}
	s.durable.Store(s.size)
	return s, nil
}

// recover reads the end of the log: it moves a torn tail aside and loads
// seq and hash of the last record.
func (s *FileSink) recover(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: stat audit log: %w", ErrUnavailable, err)
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	// A torn tail is at most one batch; the last line at most one record.
	window := min(size, maxBatch+MaxRecordSize+1)
	buf := make([]byte, window)
	if _, err := f.ReadAt(buf, size-window); err != nil {
		return fmt.Errorf("%w: read audit log tail: %w", ErrUnavailable, err)
	}
	end := bytes.LastIndexByte(buf, '\n') + 1
	if end == 0 && window < size {
		return fmt.Errorf("%w: %s: no line ends in the last %d bytes", ErrCorrupt, s.path, window)
	}
	s.size = size - window + int64(end)
	// Check the last complete line before touching anything.
	if end > 0 {
		body := buf[:end-1]
		start := bytes.LastIndexByte(body, '\n') + 1
		if start == 0 && window < size {
			return fmt.Errorf("%w: %s: last line longer than %d bytes", ErrCorrupt, s.path, MaxRecordSize)
		}
		e, reason := checkRecord(body[start:])
		if reason != "" {
			return fmt.Errorf("%w: %s: last record (at byte %d): %s", ErrCorrupt, s.path, size-window+int64(start), reason)
		}
		s.seq, s.last = e.Seq, e.Hash
	}
	if end < len(buf) {
		return s.moveTail(f, buf[end:])
	}
	return nil
}

// moveTail saves tail to a new file next to the log, makes it durable, and
// only then cuts it off the log.
func (s *FileSink) moveTail(f *os.File, tail []byte) error {
	name := fmt.Sprintf("%s.torn-%d-%d", s.path, s.size, time.Now().UnixNano())
	if err := writeDurable(name, tail); err != nil {
		return fmt.Errorf("%w: save torn tail: %w", ErrUnavailable, err)
	}
	if err := f.Truncate(s.size); err != nil {
		return fmt.Errorf("%w: truncate torn tail: %w", ErrUnavailable, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: sync audit log: %w", ErrUnavailable, err)
	}
	s.torn = name
	return nil
}

func writeDurable(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(name))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
