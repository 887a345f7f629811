package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/process"
)

// runnerTimerSlack is the timer slack of the runner's own threads: how
// late the kernel may end their sleeps to wake them together with other
// work.
//
// Go's monitor thread (sysmon) naps 20 µs at a time while a goroutine
// runs or sits in a system call, and in a runner that was idle, every
// call wakes it from its deep sleep: with Linux's default slack of 50 µs
// it woke every ~70 µs for the length of the call, 18 of the 31 context
// switches of an `echo` that finds the runner idle. With 500 µs that
// call switches 17 times and costs the runner 1.17-1.22 ms of CPU
// instead of 1.36-1.69.
//
// Under load the naps cost more than the wake-ups: when the host is busy
// the runner's threads wait for a CPU in the middle of short system
// calls, and with GOMAXPROCS=1 sysmon takes the runner's one P from
// any goroutine it finds in a system call for a whole nap, whether or
// not other work waits, handing it to another thread that finds nothing
// to do. At 2 ms `echo` over 100 sessions costs the runners 0.89-0.98
// ms of CPU per call instead of 1.12-1.18 (eight alternating runs); 5 ms
// took another tenth off, but the runner's shortest sleep (the first
// pause of a process-tree sweep, 1 ms) would then last up to 6.
//
// What the slack delays: every timer of the runner, by at most the slack
// (call timeouts and heartbeats are in seconds, its shortest waits in
// milliseconds), and, by as much, another goroutine of the runner while
// one blocks in a long system call (an fsync), until sysmon hands the P
// over.
const runnerTimerSlack = 2 * time.Millisecond

// slackEnv carries the timer slack the runner was started with across
// its re-execution, so that it re-executes only once and so that the
// processes it starts get that slack back (process.SetUserTimerSlack).
const slackEnv = "SANDGATE_RUNNER_USER_TIMER_SLACK"

// withTimerSlack gives the runner's threads runnerTimerSlack. A thread
// takes its slack from the thread that creates it, and the Go runtime
// creates its monitor thread before any code of ours runs; so the main
// thread sets its slack and the runner executes itself again, keeping
// its pid, arguments and environment. It returns only when the slack is
// in place or cannot be set, in which case the runner goes on without it
// (where PR_SET_TIMERSLACK is refused): the slack is an economy, not a
// guarantee.
func withTimerSlack() {
	if v, ok := os.LookupEnv(slackEnv); ok {
		os.Unsetenv(slackEnv)
		if ns, err := strconv.ParseInt(v, 10, 64); err == nil && ns > 0 {
			process.SetUserTimerSlack(time.Duration(ns))
		}
		return
	}
	// The slack and the exec must happen on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	started, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || started <= 0 {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(runnerTimerSlack.Nanoseconds()), 0, 0, 0); err != nil {
		return
	}
	env := append(os.Environ(), fmt.Sprintf("%s=%d", slackEnv, started))
	err = syscall.Exec(self, os.Args, env)
	// Still here: the exec failed and this process goes on as it was.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(started), 0, 0, 0)
	fmt.Fprintf(os.Stderr, "runner: re-execute with a timer slack of %s (going on without): %v\n", runnerTimerSlack, err)
}
