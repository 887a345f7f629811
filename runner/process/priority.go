package process

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// UserNice is the nice value of every process that runs user code. The
// runner stays at 0, so in its sandbox's CPU share it outweighs user code
// about nine to one (CFS weights 1024 against 110): a workload that spins
// on every CPU it has cannot starve the runner's answers to the gateway,
// heartbeats included. This is within one sandbox only; other sandboxes
// are other cgroups and unaffected. User code cannot undo it: lowering a
// nice value needs CAP_SYS_NICE or an RLIMIT_NICE the sandbox lacks.
const UserNice = 10

// forks carries fork functions to the niced thread. Linux keeps nice per
// thread, and a child starts with its forking thread's, so every process
// started there is born niced: there is no window in which it runs (or
// forks) at the runner's priority. The runner's other threads keep 0.
var (
	forks      = make(chan func())
	startForks = sync.OnceFunc(func() { go forker(make(chan struct{})) })
)

// forker runs fork functions on a thread of its own at UserNice, and
// closes locked once it has one. Locked and never unlocked: the thread is
// niced for good and must never run another goroutine. Not the main
// thread, whose nice tools like ps show as the runner's own: a goroutine
// that finds itself there starts another and keeps the main thread
// locked, so blocked, until that one has a thread elsewhere (otherwise
// the scheduler would run it next on this very thread).
func forker(locked chan<- struct{}) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		next := make(chan struct{})
		go forker(next)
		<-next
		runtime.UnlockOSThread()
		return
	}
	close(locked)
	_ = asUserThread(userTimerSlack.Load())
	for f := range forks {
		f()
	}
}

// asUserThread gives the calling thread, which the caller has locked,
// what every process that runs user code starts with: UserNice, and the
// timer slack slackNS unless it is 0. Both are the thread's, and what it
// forks or executes keeps them.
func asUserThread(slackNS int64) error {
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), UserNice); err != nil {
		return err
	}
	if slackNS > 0 {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slackNS), 0, 0, 0)
	}
	return nil
}

// StartAsUser runs start, which forks a process that will run user code
// (syscall.ForkExec, exec.Cmd.Start), on the niced thread, so that the
// process and all it forks run at UserNice.
func StartAsUser(start func() error) error {
	startForks()
	done := make(chan error, 1)
	forks <- func() { done <- start() }
	return <-done
}

// userTimerSlack is the timer slack, in nanoseconds, of the niced thread
// and so of every process started there; 0 leaves it the runner's.
var userTimerSlack atomic.Int64

// SetUserTimerSlack makes the processes that run user code start with a
// timer slack of d, which the kernel, like nice, passes from a thread to
// what it forks. The runner gives its own threads a coarse slack
// (cmd/runner) and hands user code (StartAsUser, ExecAsUser) the one it
// was started with, so its sleeps are as precise as anywhere else. Call
// it before the first process starts.
func SetUserTimerSlack(d time.Duration) { userTimerSlack.Store(d.Nanoseconds()) }
