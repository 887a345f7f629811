package process

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// waitFor turns a request's wait_ms, already checked not to be negative,
// into a duration capped by protocol.MaxOutputWait.
func waitFor(ms int64) time.Duration {
	if ms > protocol.MaxOutputWait.Milliseconds() {
		return protocol.MaxOutputWait
	}
	return time.Duration(ms) * time.Millisecond
}

// awaitOutput waits, up to d, until b has output beyond off or has ended,
// so that a follower at the end of the output is answered as soon as
// there is something new instead of polling. It returns at once when d is
// 0, when there is output at off already or when b has ended. The wait
// takes no resources of the process, so ctx alone ends it early; Close
// ends it through b's exit.
func (b *background) awaitOutput(ctx context.Context, off int64, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	grew := b.log.waitBeyond(off)
	if grew == nil {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-grew:
	case <-b.done:
	case <-t.C:
	case <-ctx.Done():
		return protocol.Errorf(protocol.CodeCanceled, "process.output of %s canceled while waiting for output", b.id)
	}
	return nil
}

// waitBeyond returns a channel closed when output beyond off is logged,
// or nil when there is some already. The check and the channel are taken
// under one lock, so output logged in between cannot be missed.
func (l *outputLog) waitBeyond(off int64) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total > off {
		return nil
	}
	if l.grew == nil {
		l.grew = make(chan struct{})
	}
	return l.grew
}
