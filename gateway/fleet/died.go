package fleet

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

// ReplacementKeeps says, for an error that announces a replacement, what
// the replacement will keep.
func (m *Fleet) ReplacementKeeps() string {
	if WorkspaceDurable(m.provider) {
		return " on the same /workspace"
	}
	return "; on this gateway's provider /workspace does not outlive its container, so its files will be gone"
}

// DiedWithin reports whether b's container is gone, waiting up to d for a
// container whose runner just died to finish stopping (with Docker's
// init, the container exits when the runner does).
func (m *Fleet) DiedWithin(ctx context.Context, b *Box, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		_, err := m.provider.Get(ctx, b.ID())
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

// IsUnresponsive reports whether err says the runner stopped answering
// (it was stopped, or starved past the heartbeat's deadline) rather than
// that it is gone.
func IsUnresponsive(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == protocol.CodeUnresponsive
}

// Replace gives b a new container on its workspace, unless a concurrent
// call already replaced generation gen. It reports whether the workspace's
// files were kept (a disk workspace) and audits the replacement.
func (m *Fleet) Replace(ctx context.Context, b *Box, gen int, p identity.Identity, why string) (kept bool, err error) {
	b.replacing.Lock()
	defer b.replacing.Unlock()
	// Another replica may have removed the sandbox (then the box is
	// forgotten and the caller told it is not found), or narrowed its
	// allowlist, which the new runner's record must keep.
	if err := m.records.refresh(ctx, b); err != nil {
		return false, err
	}
	b.Mu.Lock()
	if b.gone {
		b.Mu.Unlock()
		return false, ErrSandboxGone
	}
	old := b.sb.Info()
	if b.gen != gen {
		b.Mu.Unlock()
		return old.WorkspaceDurable, nil // another call replaced it already
	}
	b.DropClient()
	b.Mu.Unlock()

	start := time.Now()
	spec := sandbox.Spec{ID: b.ID(), Image: old.Image, Limits: m.cfg.Limits, Owner: b.Owner, Session: b.Session,
		Client: b.clientKey, Tenant: b.Tenant, Network: b.Gate.Allow().Strings(), ExpiresAt: b.lifetimeEnd(),
		Template: old.Template, Metadata: old.Metadata, Lifecycle: old.Lifecycle}
	m.metrics.RunnerDeaths.Inc()
	sb, err := m.provider.Recreate(context.WithoutCancel(ctx), spec)
	m.counted(metrics.StartReplace, start, err)
	ev := &audit.Event{Kind: audit.KindSandboxReplace, Principal: p, Session: b.Session, SandboxID: b.ID(),
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
	b.Mu.Lock()
	b.sb, b.gen = sb, b.gen+1
	b.Mu.Unlock()
	m.log.Warn("sandbox replaced", "sandbox_id", b.ID(), "session_id", b.Session, "reason", "runner "+why, "workspace_kept", kept)
	return kept, nil
}

// WorkspaceDurable reports whether p's workspaces are on disk. Providers
// that do not say are taken to be (the in-process test provider's are
// plain directories).
func WorkspaceDurable(p sandbox.Provider) bool {
	if d, ok := p.(interface{ WorkspaceDurable() bool }); ok {
		return d.WorkspaceDurable()
	}
	return true
}

// Notes added to the result of a call that ran in a replacement.
const (
	keptNote = "[the sandbox's runner %s, so it was replaced and this call ran in the new one; /workspace was kept and its files are intact; processes, /tmp and interpreter state from before are gone]"
	lostNote = "[the sandbox's runner %s, so it was replaced and this call ran in the new one; its /workspace did not outlive the old container (in memory, or a Kubernetes emptyDir), so files, processes and state from before are gone]"
)

// Recover handles a sandbox whose runner could not be reached on
// generation gen, for a call of p. A runner that is gone (its container
// stopped or was removed) or stopped answering is replaced: a new
// container with the same sandbox id, owner and expiry, on the same
// workspace. The call then runs there, and the note says what was kept.
// Any other failure is the caller's error.
func (m *Fleet) Recover(ctx context.Context, b *Box, gen int, p identity.Identity, dialErr error) (Note, error) {
	// A runner lost in the middle of a call may have been paused by
	// another replica: resumed, not replaced.
	if m.PausedElsewhere(ctx, b) {
		return m.Resume(ctx, b, p, "call")
	}
	return m.recover(ctx, b, gen, p, dialErr)
}

// recover is Recover of a sandbox not paused elsewhere.
func (m *Fleet) recover(ctx context.Context, b *Box, gen int, p identity.Identity, dialErr error) (Note, error) {
	var why string
	switch {
	case IsUnresponsive(dialErr):
		why = "stopped answering"
	case m.DiedWithin(ctx, b, 2*time.Second):
		why = "died (its container is gone)"
	case errors.Is(dialErr, sandbox.ErrNotFound):
		// The container runs but its runner socket is gone (removed on
		// the host; the sandbox itself cannot, its socket dir is sealed):
		// nothing can ever reach this runner again.
		why = "cannot be reached (its socket was removed)"
	default:
		return Note{}, fmt.Errorf("connect to sandbox: %w", dialErr)
	}
	kept, err := m.Replace(ctx, b, gen, p, why)
	if err != nil {
		return Note{}, fmt.Errorf("sandbox %s: its runner %s and a replacement could not be started: %w", b.ID(), why, err)
	}
	text := fmt.Sprintf(lostNote, why)
	if kept {
		text = fmt.Sprintf(keptNote, why)
	}
	return Note{Text: text, Key: MetaSandboxReplaced,
		Meta: map[string]any{"sandbox_id": b.ID(), "reason": why, "workspace_kept": kept}}, nil
}

// Attach acquires b for a call of p (busy: the idle sweep leaves it
// alone) and returns its runner's connection, replacing the sandbox
// first when its runner is dead (Recover); the note, when it has text,
// says so. On an error b is released again.
func (m *Fleet) Attach(ctx context.Context, b *Box, p identity.Identity) (*protocol.Client, Note, error) {
	return m.attach(ctx, b, p, false)
}

// AttachTraffic is Attach for a request that resumes a paused sandbox
// only where its lifecycle lets traffic do so (E2B's data plane): one
// that waits for its owner's resume (WaitsForResume), as another
// replica's pause may have left it, is ErrWaitsForResume.
func (m *Fleet) AttachTraffic(ctx context.Context, b *Box, p identity.Identity) (*protocol.Client, Note, error) {
	return m.attach(ctx, b, p, true)
}

// ErrWaitsForResume: the sandbox is paused, and only its owner's resume
// (E2B's connect) starts it again (Box.WaitsForResume).
var ErrWaitsForResume = errors.New("sandbox is paused, and only a resume (connect) by its owner starts it again")

func (m *Fleet) attach(ctx context.Context, b *Box, p identity.Identity, traffic bool) (*protocol.Client, Note, error) {
	gen := b.Generation()
	c, err := b.Acquire(ctx)
	if err == nil {
		return c, Note{}, nil
	}
	b.Release()
	var note Note
	paused := errors.Is(err, errPaused) || m.PausedElsewhere(ctx, b)
	switch {
	case paused && traffic && b.WaitsForResume():
		return nil, Note{}, fmt.Errorf("sandbox %s: %w", b.ID(), ErrWaitsForResume)
	case paused:
		note, err = m.Resume(ctx, b, p, "call")
	default:
		note, err = m.recover(ctx, b, gen, p, err)
	}
	if err != nil {
		return nil, Note{}, err
	}
	if c, err = b.Acquire(ctx); err != nil {
		b.Release()
		return nil, Note{}, err
	}
	return c, note, nil
}
