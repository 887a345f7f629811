package main

import (
	"runtime"
	"sync"
)

// spareThreads is how many idle OS threads the runner starts with beyond
// what it needs at rest.
const spareThreads = 8

// warmThreads makes the Go runtime create spareThreads OS threads now and
// keep them idle. Threads count against the sandbox's pids limit, which
// sandbox code can exhaust (a fork bomb); a runtime that then needs a new
// thread cannot create one and the runner dies with the sandbox. Idle
// threads are never given back, so with spares in the pool the runtime
// rarely needs to create one under such an attack.
func warmThreads(n int) {
	var locked, ready sync.WaitGroup
	release := make(chan struct{})
	locked.Add(n)
	ready.Add(n)
	for range n {
		go func() {
			defer ready.Done()
			// A locked goroutine that blocks keeps its thread, so the
			// others need threads of their own.
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread() // the thread goes back to the idle pool
		}()
	}
	locked.Wait()
	close(release)
	ready.Wait()
}
