package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/runner"
)

// reopenAfter is how long the runner stays deaf after a checkpoint
// prepare (runner.Gate) when no signal comes: the gateway died between
// asking and checkpointing. The checkpoint itself follows the prepare in
// milliseconds, and the sandbox is frozen while it is written.
const reopenAfter = 30 * time.Second

// reopenOnSignal binds the runner's listener again on SIGUSR2, which the
// gateway sends (through the container's init, which forwards it) after a
// restore or a failed checkpoint. A SIGUSR2 from code in the sandbox (same
// uid) is harmless: a listening Gate ignores it.
func reopenOnSignal(ctx context.Context, gate *runner.Gate, log *slog.Logger) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	defer signal.Stop(sig)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			if !gate.Suspended() {
				continue
			}
			if err := gate.Reopen(); err != nil {
				log.Error("listen again after a checkpoint", "error", err)
				continue
			}
			log.Info("runner serving again after a checkpoint", "addr", gate.Addr().String())
		}
	}
}
