package process

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// inheritableSignals are the signals whose "ignored" disposition a child
// would inherit across exec. The Go runtime installs its own handler for
// every other signal even when it starts ignored (and a handled signal is
// reset to default at exec), but it keeps SIGHUP and SIGINT ignored. A
// runner started under nohup, or by a harness that ignores SIGINT, would
// otherwise hand that to every user process: process_kill with SIGHUP or
// SIGINT would do nothing.
var inheritableSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT}

var resetSignalsOnce sync.Once

// resetIgnoredSignals makes every inheritable signal that the runner was
// started with ignored a handled one instead. A handled signal is reset
// to its default in the child at exec, so user processes always start
// with default dispositions. What the runner itself does on these signals
// is decided elsewhere (cmd/runner handles SIGTERM and SIGINT); the rest
// are read and dropped here, which for the runner equals ignoring them.
func resetIgnoredSignals() {
	resetSignalsOnce.Do(func() {
		var ignored []os.Signal
		for _, s := range inheritableSignals {
			if signal.Ignored(s) {
				ignored = append(ignored, s)
			}
		}
		if len(ignored) == 0 {
			return
		}
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, ignored...)
		go func() {
			for range ch {
			}
		}()
	})
}
