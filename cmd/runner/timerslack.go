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
// instead of 1.36-1.69. Nothing in the runner needs its timers to the
// tenth of a millisecond: call timeouts and heartbeats are in seconds,
// its shortest waits in milliseconds.
const runnerTimerSlack = 500 * time.Microsecond

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
