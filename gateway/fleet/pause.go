package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// A paused sandbox keeps its box: its id, owner, allowlist, deadline and
// quota stay as they were, and its provider handle is a pausedSandbox
// that no call can reach. The first call that needs its runner resumes
// it (Attach); concurrent first calls resume it once, since pause,
// resume and replacement hold the box's replacing lock.

// ErrCannotPause is a pause asked of a gateway whose provider cannot
// pause sandboxes (sandbox.Pauser).
var ErrCannotPause = errors.New("this gateway's sandbox provider cannot pause sandboxes; destroy the sandbox instead, or ask the operator for one that can (Docker)")

// errPaused is what connecting to a paused sandbox's runner returns; it
// tells Attach to resume the sandbox rather than replace it.
var errPaused = errors.New("the sandbox is paused")

// pausedSandbox stands for a paused sandbox in its box.
type pausedSandbox struct {
	info sandbox.Info // as it was when paused, State StatePaused
	p    sandbox.Provider
}

func (s pausedSandbox) ID() string         { return s.info.ID }
func (s pausedSandbox) Info() sandbox.Info { return s.info }
func (s pausedSandbox) Dial(context.Context) (net.Conn, error) {
	return nil, fmt.Errorf("dial sandbox %s: %w", s.info.ID, errPaused)
}
func (s pausedSandbox) Destroy(ctx context.Context) error { return s.p.Remove(ctx, s.info.ID) }

// Paused reports whether the box's sandbox is paused (or being paused).
func (b *Box) Paused() bool {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	return b.paused
}

// Pause ends everything running in b's sandbox and frees its CPU and
// memory, keeping its workspace, id and record, for p; reason ("sandbox_pause",
// "idle") goes into the sandbox.pause audit record. A sandbox with calls
// in flight is not paused. Pausing a paused sandbox does nothing.
func (m *Fleet) Pause(ctx context.Context, b *Box, p identity.Identity, reason string) error {
	pz, ok := m.provider.(sandbox.Pauser)
	if !ok {
		return ErrCannotPause
	}
	b.replacing.Lock()
	defer b.replacing.Unlock()
	b.Mu.Lock()
	switch {
	case b.gone:
		b.Mu.Unlock()
		return ErrSandboxGone
	case b.paused:
		b.Mu.Unlock()
		return nil
	case b.inUse.Load() > 0:
		b.Mu.Unlock()
		return fmt.Errorf("sandbox %s has %d calls in flight: pause it when they are done", b.ID(), b.inUse.Load())
	}
	// From here on a call that connects finds it paused and waits, on
	// the replacing lock, to resume it.
	b.paused = true
	b.DropClient()
	info := b.sb.Info()
	b.Mu.Unlock()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	start := time.Now()
	err := pz.Pause(ctx, b.ID())
	ev := &audit.Event{Kind: audit.KindSandboxPause, Principal: p, Session: b.Session, SandboxID: b.ID(), ContainerID: info.ContainerID,
		Summary: map[string]string{"reason": reason}, Outcome: audit.OutcomeOK, DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
	}
	m.appendAudit(ctx, ev)
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if err != nil {
		b.paused = false // the provider says it may still run: calls try it
		return fmt.Errorf("pause sandbox %s: %w", b.ID(), err)
	}
	info.State = sandbox.StatePaused
	b.sb, b.pausedAt = pausedSandbox{info: info, p: m.provider}, time.Now()
	m.log.Info("sandbox paused", "sandbox_id", b.ID(), "reason", reason, "duration_ms", ev.DurationMs)
	return nil
}

// Resume starts b's paused sandbox again for p, on its workspace; reason
// ("call", "sandbox_resume") goes into the sandbox.resume audit record.
// The note says what the call should know. A sandbox that runs already
// (another call resumed it) gives an empty note.
func (m *Fleet) Resume(ctx context.Context, b *Box, p identity.Identity, reason string) (Note, error) {
	pz, ok := m.provider.(sandbox.Pauser)
	if !ok {
		return Note{}, ErrCannotPause
	}
	b.replacing.Lock()
	defer b.replacing.Unlock()
	b.Mu.Lock()
	if b.gone {
		b.Mu.Unlock()
		return Note{}, ErrSandboxGone
	}
	if !b.paused {
		b.Mu.Unlock()
		return Note{}, nil
	}
	pausedAt := b.pausedAt
	b.Mu.Unlock()

	start := time.Now()
	sb, err := pz.Resume(context.WithoutCancel(ctx), b.ID())
	ev := &audit.Event{Kind: audit.KindSandboxResume, Principal: p, Session: b.Session, SandboxID: b.ID(),
		Summary: map[string]string{"reason": reason}, Outcome: audit.OutcomeOK, DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
		m.appendAudit(ctx, ev)
		return Note{}, fmt.Errorf("resume sandbox %s: %w", b.ID(), err)
	}
	ev.ContainerID = sb.Info().ContainerID
	m.appendAudit(ctx, ev)
	b.Mu.Lock()
	b.sb, b.gen, b.paused = sb, b.gen+1, false
	b.Mu.Unlock()
	b.touch()
	m.log.Info("sandbox resumed", "sandbox_id", b.ID(), "reason", reason, "duration_ms", ev.DurationMs)
	meta := map[string]any{"sandbox_id": b.ID()}
	since := "a gateway restart"
	if !pausedAt.IsZero() {
		meta["paused_at"] = pausedAt.UTC().Format(time.RFC3339)
		since = pausedAt.UTC().Format(time.RFC3339)
	}
	return Note{Key: MetaSandboxResumed, Meta: meta,
		Text: fmt.Sprintf("[sandbox %s was paused (since %s) and was resumed for this call: /workspace is as it was; processes, /tmp and interpreter state from before the pause are gone]", b.ID(), since)}, nil
}
