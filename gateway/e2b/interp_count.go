package e2b

import "sync"

// maxExecCounts bounds how many (sandbox, context) execution counts the
// API keeps; beyond it an arbitrary one is forgotten (it starts again at
// 1), which costs a client nothing but a count.
const maxExecCounts = 4096

// execCounter keeps the execution count the SDK shows per sandbox and
// context, like a Jupyter kernel's: it counts cells since the interpreter
// started. Its zero value is ready to use. It lives in the gateway
// process, so another replica or a restart starts again at 1.
type execCounter struct {
	mu     sync.Mutex
	counts map[execKey]int
}

type execKey struct{ sandbox, context string }

// next counts one more cell in the context; restarted says the cell ran
// in a new interpreter, whose count starts again.
func (e *execCounter) next(sandboxID, contextID string, restarted bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := execKey{sandboxID, contextID}
	if e.counts == nil {
		e.counts = map[execKey]int{}
	}
	if _, ok := e.counts[k]; !ok && len(e.counts) >= maxExecCounts {
		for old := range e.counts {
			delete(e.counts, old)
			break
		}
	}
	if restarted {
		e.counts[k] = 0
	}
	e.counts[k]++
	return e.counts[k]
}

// reset forgets a context's count: its interpreter was restarted.
func (e *execCounter) reset(sandboxID, contextID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.counts, execKey{sandboxID, contextID})
}
