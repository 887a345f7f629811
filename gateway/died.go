package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/metrics"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Notes added to the result of a call that ran in a replacement (see
// callnote.go).
const (
	keptNote = "[the sandbox's runner %s, so it was replaced and this call ran in the new one; /workspace was kept and its files are intact; processes, /tmp and interpreter state from before are gone]"
	lostNote = "[the sandbox's runner %s, so it was replaced and this call ran in the new one; its /workspace did not outlive the old container (in memory, or a Kubernetes emptyDir), so files, processes and state from before are gone]"
)

// replacementKeeps says, for an error that announces a replacement, what
// the replacement will keep.
func (m *sandboxes) replacementKeeps() string {
	if workspaceDurable(m.provider) {
		return " on the same /workspace"
	}
	return "; on this gateway's provider /workspace does not outlive its container, so its files will be gone"
}

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

// isUnresponsive reports whether err says the runner stopped answering
// (it was stopped, or starved past the heartbeat's deadline) rather than
// that it is gone.
func isUnresponsive(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == protocol.CodeUnresponsive
}

// recoverDead handles a sandbox whose runner could not be reached on
// generation gen. A runner that is gone (its container stopped or was
// removed) or stopped answering is replaced: a new container with the same
// sandbox id, owner and expiry, on the same workspace. The call then runs
// there, and its result says what was kept. Any other failure is the
// caller's error.
func (c *call) recoverDead(ctx context.Context, b *box, gen int, dialErr error) error {
	var why string
	switch {
	case isUnresponsive(dialErr):
		why = "stopped answering"
	case c.g.boxes.diedWithin(ctx, b, 2*time.Second):
		why = "died (its container is gone)"
	case errors.Is(dialErr, sandbox.ErrNotFound):
		// The container runs but its runner socket is gone (removed on
		// the host; the sandbox itself cannot, its socket dir is sealed):
		// nothing can ever reach this runner again.
		why = "cannot be reached (its socket was removed)"
	default:
		return fmt.Errorf("connect to sandbox: %w", dialErr)
	}
	kept, err := c.g.boxes.replace(ctx, b, gen, c.p, why)
	if err != nil {
		return fmt.Errorf("sandbox %s: its runner %s and a replacement could not be started: %w", b.id(), why, err)
	}
	// Added to a note already there (a default sandbox's), not replacing it.
	note := fmt.Sprintf(lostNote, why)
	if kept {
		note = fmt.Sprintf(keptNote, why)
	}
	c.notes = append(c.notes, callNote{text: note, key: metaSandboxReplaced,
		meta: map[string]any{"sandbox_id": b.id(), "reason": why, "workspace_kept": kept}})
	return nil
}

// replace gives b a new container on its workspace, unless a concurrent
// call already replaced generation gen. It reports whether the workspace's
// files were kept (a disk workspace) and audits the replacement.
func (m *sandboxes) replace(ctx context.Context, b *box, gen int, p identity.Identity, why string) (kept bool, err error) {
	b.replacing.Lock()
	defer b.replacing.Unlock()
	if m.replicated() {
		// Another replica may have removed the sandbox (then the box is
		// forgotten and the caller told it is not found), or narrowed its
		// allowlist, which the new runner's record must keep.
		if err := m.refreshNetwork(ctx, b); err != nil {
			return false, err
		}
	}
	b.mu.Lock()
	if b.gone {
		b.mu.Unlock()
		return false, errSandboxGone
	}
	old := b.sb.Info()
	if b.gen != gen {
		b.mu.Unlock()
		return old.WorkspaceDurable, nil // another call replaced it already
	}
	b.dropClient()
	b.mu.Unlock()

	start := time.Now()
	spec := sandbox.Spec{ID: b.id(), Image: old.Image, Limits: m.cfg.Limits, Owner: b.owner, Session: b.session,
		Client: b.clientKey, Tenant: b.tenant, Network: b.gate.Allow().Strings(), ExpiresAt: b.expires,
		Template: old.Template, Metadata: old.Metadata}
	m.metrics.RunnerDeaths.Inc()
	sb, err := m.provider.Recreate(context.WithoutCancel(ctx), spec)
	m.counted(metrics.StartReplace, start, err)
	ev := &audit.Event{Kind: audit.KindSandboxReplace, Principal: p, Session: b.session, SandboxID: b.id(),
		Summary: map[string]string{"reason": "runner " + why}, Outcome: audit.OutcomeOK, DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
		m.appendAudit(ctx, ev)
		return false, err
	}
	kept = sb.Info().WorkspaceDurable
	ev.ContainerID = sb.Info().ContainerID
	ev.Summary["workspace_kept"] = fmt.Sprint(kept)
	if err := m.audit.Append(context.WithoutCancel(ctx), ev); err != nil {
		m.log.Error("audit append failed", "kind", ev.Kind, "sandbox_id", ev.SandboxID, "error", err)
	}
	b.mu.Lock()
	b.sb, b.gen = sb, b.gen+1
	b.mu.Unlock()
	m.log.Warn("sandbox replaced", "sandbox_id", b.id(), "session_id", b.session, "reason", "runner "+why, "workspace_kept", kept)
	return kept, nil
}
