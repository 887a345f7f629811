package e2bbackend

import (
	"context"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/gateway/fleet"
)

// Pause pauses one of the caller's sandboxes at once: calls in flight
// end as its runner stops, as an E2B client expects of a pause. Its
// memory is kept where the gateway can (gVisor); a keepMemory: true it
// cannot honour is refused, naming the runtime that can.
func (e e2bBackend) Pause(ctx context.Context, id string, keepMemory *bool) error {
	summary := map[string]any{"sandbox_id": id}
	if keepMemory != nil {
		summary["keep_memory"] = *keepMemory
	}
	return e.control(ctx, "sandbox.pause", summary, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		memory := fleet.MemoryChoice(keepMemory)
		if can, why := e.g.boxes.KeepsMemory(); memory == fleet.MemoryKeep && !can {
			return e2b.KeepMemoryError(why)
		}
		if b.Paused() {
			return fmt.Errorf("sandbox %s is %w already", id, e2b.ErrPaused)
		}
		return e.g.boxes.Pause(ctx, b, p, fleet.ReasonE2BPause, fleet.PauseOptions{Memory: memory, EvenBusy: true})
	})
}

// Connect returns one of the caller's sandboxes running: a paused one is
// resumed (resumed is then true), and its timeout set when timeout is
// not zero.
func (e e2bBackend) Connect(ctx context.Context, id string, timeout time.Duration, reboot bool) (e2b.Sandbox, bool, error) {
	var out e2b.Sandbox
	var resumed bool
	summary := map[string]any{"sandbox_id": id}
	if timeout > 0 {
		summary["timeout_s"] = int64(timeout.Seconds())
	}
	err := e.control(ctx, "sandbox.connect", summary, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		if b.Paused() {
			if reboot {
				if err := e.g.boxes.DropMemory(ctx, b); err != nil {
					return err
				}
			}
			note, err := e.g.boxes.Resume(ctx, b, p, "e2b connect")
			if err != nil {
				return err
			}
			resumed = note.Key != ""
		}
		if timeout > 0 {
			if _, err := e.g.boxes.SetDeadline(ctx, b, time.Now().Add(timeout)); err != nil {
				return err
			}
		} else {
			e.g.boxes.RefreshDeadline(ctx, b)
		}
		out = e.describe(b, p)
		return nil
	})
	return out, resumed, err
}
