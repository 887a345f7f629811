package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// diedNote starts the result of a call that ran in a replacement sandbox.
const diedNote = "[the previous sandbox died (its container is gone), so this call ran in a new one; files and processes from before are gone]\n"

// diedWithin reports whether b's container is gone, waiting up to d for a
// container whose runner just died to finish stopping (with Docker's
// init, the container exits when the runner does).
func (m *sandboxes) diedWithin(ctx context.Context, b *box, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		_, err := m.provider.Get(ctx, b.id())
		if errors.Is(err, sandbox.ErrNotFound) {
			return true
		}
		if err != nil || time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// recoverDead handles a sandbox whose runner could not be reached. When
// its container is gone, the box is destroyed (audited as "died"); the
// session's own sandbox is then replaced so the session keeps working,
// while a sandbox named by sandbox_id is reported gone. It returns the
// replacement box, or an error for the caller.
func (c *call) recoverDead(ctx context.Context, b *box, named bool, dialErr error) (*box, error) {
	if !c.g.boxes.diedWithin(ctx, b, 2*time.Second) {
		return nil, fmt.Errorf("connect to sandbox: %w", dialErr)
	}
	_ = c.g.boxes.destroy(ctx, b, c.p, "died")
	if named || b.session == "" || b.session != c.session {
		return nil, fmt.Errorf("sandbox %s died (its container is gone) and was removed; create a new one with sandbox_create", b.id())
	}
	nb, err := c.g.boxes.forSession(ctx, c.p, c.session)
	if err != nil {
		return nil, fmt.Errorf("the session's sandbox died and a new one could not be created: %w", err)
	}
	c.note = diedNote
	return nb, nil
}
