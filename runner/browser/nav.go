package browser

import (
	"context"
	"sync"
	"time"
)

// navState follows the main frame's loading, so that an action that may
// navigate (a click, Enter) can wait for the page it led to.
type navState struct {
	mu      sync.Mutex
	seq     int           // navigations begun
	loading bool          // one is under way
	changed chan struct{} // closed and replaced on every change
}

func newNavState() *navState { return &navState{changed: make(chan struct{})} }

func (n *navState) begin() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	n.loading = true
	close(n.changed)
	n.changed = make(chan struct{})
}

func (n *navState) end() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.loading = false
	close(n.changed)
	n.changed = make(chan struct{})
}

func (n *navState) state() (seq int, loading bool, changed <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seq, n.loading, n.changed
}

// settleGrace is how long, after an action and a round trip through the
// page (see afterInput), a navigation the action caused may take to be
// reported as begun: a click handler that sets location, a form
// submission. The round trip means the page has run the action's
// handlers, so this covers only the browser's report of the navigation
// they requested. It was 300 ms without the round trip, which made every
// click that navigates nowhere cost 300 ms.
const settleGrace = 60 * time.Millisecond

// settle waits, after an action, for a navigation that began since seq
// (the value before the action) to finish loading, and reports whether
// one began. A navigation that does not begin within settleGrace is not
// waited for; one that does is waited for until ctx ends.
func (n *navState) settle(ctx context.Context, seq int) (bool, error) {
	grace := time.NewTimer(settleGrace)
	defer grace.Stop()
	for {
		now, loading, changed := n.state()
		began := now != seq
		if began && !loading {
			return true, nil
		}
		if !began {
			select {
			case <-grace.C:
				return false, nil
			case <-changed:
			case <-ctx.Done():
				return false, ctx.Err()
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
}
