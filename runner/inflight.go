package runner

import (
	"context"
	"sync"
)

// inflight tracks the requests of one connection so that cancel can find
// them and the connection can wait for all of them before it closes.
type inflight struct {
	mu      sync.Mutex
	cancels map[uint64]context.CancelFunc
	wg      sync.WaitGroup
}

func newInflight() *inflight { return &inflight{cancels: map[uint64]context.CancelFunc{}} }

// add reports whether id was free and is now tracked.
func (f *inflight) add(id uint64, cancel context.CancelFunc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.cancels[id]; busy {
		return false
	}
	f.cancels[id] = cancel
	f.wg.Add(1)
	return true
}

func (f *inflight) cancel(id uint64) {
	f.mu.Lock()
	cancel := f.cancels[id]
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (f *inflight) done(id uint64) {
	f.mu.Lock()
	cancel := f.cancels[id]
	delete(f.cancels, id)
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		f.wg.Done()
	}
}

func (f *inflight) wait() { f.wg.Wait() }
