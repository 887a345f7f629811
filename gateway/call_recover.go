package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/sandbox"
)

// Notes added to the result of a call that ran in a replacement (see callnote.go).
const (
	keptNote = "[the sandbox's runner %s, so it was replaced and this call ran in the new one; /workspace was kept and its files are intact; processes, /tmp and interpreter state from before are gone]"
	lostNote = "[the sandbox's runner %s, so it was replaced and this call ran in the new one; its /workspace did not outlive the old container (in memory, or a Kubernetes emptyDir), so files, processes and state from before are gone]"
)

// recoverDead handles a sandbox whose runner could not be reached on
// generation gen. A runner that is gone (its container stopped or was
// removed) or stopped answering is replaced: a new container with the same
// sandbox id, owner and expiry, on the same workspace. The call then runs
// there, and its result says what was kept. Any other failure is the
// caller's error.
func (c *call) recoverDead(ctx context.Context, b *fleet.Box, gen int, dialErr error) error {
	var why string
	switch {
	case fleet.IsUnresponsive(dialErr):
		why = "stopped answering"
	case c.g.boxes.DiedWithin(ctx, b, 2*time.Second):
		why = "died (its container is gone)"
	case errors.Is(dialErr, sandbox.ErrNotFound):
		// The container runs but its runner socket is gone (removed on
		// the host; the sandbox itself cannot, its socket dir is sealed):
		// nothing can ever reach this runner again.
		why = "cannot be reached (its socket was removed)"
	default:
		return fmt.Errorf("connect to sandbox: %w", dialErr)
	}
	kept, err := c.g.boxes.Replace(ctx, b, gen, c.p, why)
	if err != nil {
		return fmt.Errorf("sandbox %s: its runner %s and a replacement could not be started: %w", b.ID(), why, err)
	}
	// Added to a note already there (a default sandbox's), not replacing it.
	note := fmt.Sprintf(lostNote, why)
	if kept {
		note = fmt.Sprintf(keptNote, why)
	}
	c.notes = append(c.notes, fleet.Note{Text: note, Key: fleet.MetaSandboxReplaced,
		Meta: map[string]any{"sandbox_id": b.ID(), "reason": why, "workspace_kept": kept}})
	return nil
}
