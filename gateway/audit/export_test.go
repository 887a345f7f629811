package audit

import "sync"

// Seal exposes seal to the golden test: it sets e.Hash and returns the
// record's line.
var Seal = seal

// Prepare exposes prepare to the benchmark of Append's CPU part.
var Prepare = prepare

// SetFault makes the sink's file operations fail with err: op "write"
// writes half of the buffer and then fails, "sync" and "truncate" fail
// outright. SetFault(s, op, nil) clears op. Call it only while no Append
// is in flight.
func SetFault(s *FileSink, op string, err error) {
	ff, ok := s.f.(*faultFile)
	if !ok {
		ff = &faultFile{file: s.f, faults: map[string]error{}}
		s.f = ff
	}
	ff.mu.Lock()
	defer ff.mu.Unlock()
	ff.faults[op] = err
}

type faultFile struct {
	file
	mu     sync.Mutex
	faults map[string]error
}

func (f *faultFile) fault(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faults[op]
}

func (f *faultFile) Write(b []byte) (int, error) {
	if err := f.fault("write"); err != nil {
		n, _ := f.file.Write(b[:len(b)/2])
		return n, err
	}
	return f.file.Write(b)
}

func (f *faultFile) Sync() error {
	if err := f.fault("sync"); err != nil {
		return err
	}
	return f.file.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fault("truncate"); err != nil {
		return err
	}
	return f.file.Truncate(size)
}

var IsDecodedJSON = isDecodedJSON
