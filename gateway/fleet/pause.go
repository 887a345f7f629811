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
// record stay as they were, and its provider handle is a pausedSandbox
// that no call can reach. The first call that needs its runner resumes
// it (Attach); concurrent first calls resume it once, since pause,
// resume and replacement hold the box's replacing lock.
//
// Paused sandboxes count against their tenant's paused quota (number and
// bytes on disk), not its live one; resuming takes a live slot again. A
// paused sandbox is destroyed after Config.PausedRetention; a resumed one
// starts a new run with a whole maximum lifetime (as E2B's do).

// ErrCannotPause is a pause asked of a gateway whose provider cannot
// pause sandboxes (sandbox.Pauser).
var ErrCannotPause = fmt.Errorf("%w: this gateway cannot pause sandboxes (its provider cannot, or it runs as replicas, which do not pause yet); destroy the sandbox instead, or ask the operator for a single gateway on Docker", sandbox.ErrCannotPause)

// ErrPausedQuota is a pause that would take the tenant past its paused
// quota.
var ErrPausedQuota = errors.New("paused sandbox quota reached")

// errPaused is what connecting to a paused sandbox's runner returns; it
// tells Attach to resume the sandbox rather than replace it.
var errPaused = errors.New("the sandbox is paused")

// resumeGrace is the timeout a sandbox whose owner's deadline passed
// while it was paused gets on resume, so that the call that resumed it
// can finish; an E2B connect sets its own right after.
const resumeGrace = 5 * time.Minute

// pausedSandbox stands for a paused sandbox in its box.
type pausedSandbox struct {
	info sandbox.Info // as listed once paused, State StatePaused
	p    sandbox.Provider
}

func (s pausedSandbox) ID() string         { return s.info.ID }
func (s pausedSandbox) Info() sandbox.Info { return s.info }
func (s pausedSandbox) Dial(context.Context) (net.Conn, error) {
	return nil, fmt.Errorf("dial sandbox %s: %w", s.info.ID, errPaused)
}
func (s pausedSandbox) Destroy(ctx context.Context) error { return s.p.Remove(ctx, s.info.ID) }

// Paused reports whether the box's sandbox is paused (or being paused).
func (b *Box) Paused() bool { return b.paused.Load() }

// PausedAt is when the box's sandbox was paused; zero when it is not, or
// when it was paused before this gateway started and the provider cannot
// tell.
func (b *Box) PausedAt() time.Time {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if !b.paused.Load() {
		return time.Time{}
	}
	return b.pausedAt
}

// RemovedAt is when a paused sandbox will be destroyed unless resumed
// first (zero for a running one).
func (m *Fleet) RemovedAt(b *Box) time.Time {
	at := b.PausedAt()
	if at.IsZero() {
		return time.Time{}
	}
	return at.Add(m.cfg.PausedRetention)
}

// Pauses reports whether idle sandboxes are paused rather than
// destroyed: the operator chose it (Config.OnIdle) and the provider can.
func (m *Fleet) Pauses() bool {
	_, ok := m.pauser()
	return ok && m.cfg.OnIdle != OnIdleDestroy
}

// pauser is the provider as a sandbox.Pauser, when it is one. Replicas
// share the pause through the provider's records (a replicated gateway's
// provider is a sandbox.Recorder, whose List says StatePaused): a
// replica whose call finds the runner gone asks them (PausedElsewhere)
// and resumes the sandbox rather than replace it.
func (m *Fleet) pauser() (sandbox.Pauser, bool) {
	pz, ok := m.provider.(sandbox.Pauser)
	return pz, ok
}

// PausedElsewhere reports whether another replica paused b's sandbox:
// the provider lists it paused while this replica's box thinks it runs.
// The box is then marked paused, as if this replica had paused it, with
// the reason the provider recorded.
func (m *Fleet) PausedElsewhere(ctx context.Context, b *Box) bool {
	if !m.cfg.Replicated || !m.CanPause() {
		return false
	}
	listed, err := m.provider.List(ctx, sandbox.Filter{ID: b.ID()})
	if err != nil || len(listed) != 1 || listed[0].State != sandbox.StatePaused {
		return false
	}
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if b.gone || b.paused.Load() {
		return !b.gone
	}
	b.paused.Store(true)
	b.DropClient()
	b.sb, b.pausedAt, b.pausedFor = pausedSandbox{info: listed[0], p: m.provider}, listed[0].PausedAt, listed[0].PausedFor
	b.pausedBytes.Store(listed[0].DiskBytes)
	return true
}

// Memory says what a pause does with a sandbox's memory.
type Memory int

const (
	// MemoryIfCan keeps it where the provider can (gVisor), so that the
	// sandbox's processes carry on when it resumes, and drops it where
	// it cannot: the default of every pause.
	MemoryIfCan Memory = iota
	// MemoryKeep keeps it or fails (E2B's keepMemory: true): where it
	// cannot be kept the sandbox runs on.
	MemoryKeep
	// MemoryDrop pauses with the files only (keepMemory: false).
	MemoryDrop
)

// MemoryChoice is what a caller's keep-memory switch asks for: nil the
// default, true to keep it or fail, false to drop it.
func MemoryChoice(keep *bool) Memory {
	switch {
	case keep == nil:
		return MemoryIfCan
	case *keep:
		return MemoryKeep
	}
	return MemoryDrop
}

// PauseOptions qualify a pause.
type PauseOptions struct {
	// Memory is what becomes of the sandbox's memory.
	Memory Memory
	// EvenBusy pauses a sandbox whatever it is doing: calls in flight
	// fail as its runner stops (E2B's pause, which clients expect to end
	// their streams).
	EvenBusy bool
}

// Pause ends everything running in b's sandbox and frees its CPU and
// memory, keeping its workspace, id and record (and, where the provider
// can, its memory, to be restored on resume), for p; reason
// ("sandbox_pause", "idle", ...) goes into the sandbox.pause audit
// record. A sandbox with calls in flight is not paused unless
// opts.EvenBusy, nor one that would take its tenant past the paused
// quota. Pausing a paused sandbox does nothing.
func (m *Fleet) Pause(ctx context.Context, b *Box, p identity.Identity, reason string, opts PauseOptions) error {
	return m.pause(ctx, b, p, reason, opts)
}

// KeepsMemory reports whether a pause keeps a sandbox's memory here;
// when not, why not and what would, for the caller.
func (m *Fleet) KeepsMemory() (bool, string) {
	if _, ok := m.pauser(); !ok {
		return false, ErrCannotPause.Error()
	}
	mp, ok := m.provider.(sandbox.MemoryPauser)
	if !ok {
		return false, "this gateway's provider cannot checkpoint a sandbox's memory; run it on Docker with --runtime runsc (gVisor)"
	}
	return mp.KeepsMemory()
}

// DropMemory discards paused b's memory: its next resume starts its
// processes afresh on its files (E2B's connect with memory false).
func (m *Fleet) DropMemory(ctx context.Context, b *Box) error {
	mp, ok := m.provider.(sandbox.MemoryPauser)
	if !ok || !b.Paused() {
		return nil
	}
	b.replacing.Lock()
	defer b.replacing.Unlock()
	if err := mp.DropMemory(ctx, b.ID()); err != nil {
		return err
	}
	b.Mu.Lock()
	if ps, ok := b.sb.(pausedSandbox); ok {
		ps.info.MemoryKept = false
		b.sb = ps
	}
	b.Mu.Unlock()
	return nil
}

// CanPause reports whether this gateway can pause sandboxes at all.
func (m *Fleet) CanPause() bool {
	_, ok := m.pauser()
	return ok
}

// Reasons for a pause its owner asked for (Pause's reason).
const (
	ReasonPauseTool = "sandbox_pause" // MCP
	ReasonE2BPause  = "e2b pause"     // E2B's POST /sandboxes/{id}/pause
)

// WaitsForResume reports whether b is paused at its owner's request (a
// pause call, or the timeout its owner set with onTimeout pause; not the
// gateway's idle policy, nor a pause of the gateway's own, such as a
// snapshot a crash cut short) with a lifecycle that does not resume it on
// traffic: an E2B data-plane request then answers that it is paused
// rather than resume it. The reason is the provider's record of the
// pause, so this holds on every replica and after a restart.
func (b *Box) WaitsForResume() bool {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if !b.paused.Load() {
		return false
	}
	switch b.pausedFor {
	case ReasonPauseTool, ReasonE2BPause, reasonDeadline:
		return !b.sb.Info().Lifecycle.AutoResume
	}
	return false
}

// pause is Pause. The sweep pauses with EvenBusy a sandbox at the end of
// its maximum lifetime or of its owner's timeout: it ends its run
// whatever it is doing, as it used to be destroyed.
func (m *Fleet) pause(ctx context.Context, b *Box, p identity.Identity, reason string, opts PauseOptions) error {
	pz, ok := m.pauser()
	if !ok {
		return ErrCannotPause
	}
	evenBusy := opts.EvenBusy
	keepMemory, why := m.KeepsMemory()
	if opts.Memory == MemoryKeep && !keepMemory {
		return fmt.Errorf("pause sandbox %s with its memory: %w: %s", b.ID(), sandbox.ErrCannotKeepMemory, why)
	}
	keepMemory = keepMemory && opts.Memory != MemoryDrop
	b.replacing.Lock()
	defer b.replacing.Unlock()
	b.Mu.Lock()
	switch {
	case b.gone:
		b.Mu.Unlock()
		return ErrSandboxGone
	case b.paused.Load():
		b.Mu.Unlock()
		return nil
	case b.inUse.Load() > 0 && !evenBusy:
		b.Mu.Unlock()
		return fmt.Errorf("sandbox %s has %d calls in flight: pause it when they are done", b.ID(), b.inUse.Load())
	}
	b.Mu.Unlock()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	release, err := m.reservePaused(ctx, b)
	if err != nil {
		return err
	}
	defer release()

	b.Mu.Lock()
	if b.gone || (b.inUse.Load() > 0 && !evenBusy) { // while the quota was counted
		b.Mu.Unlock()
		return fmt.Errorf("sandbox %s is in use or gone: not paused", b.ID())
	}
	// From here on a call that connects finds it paused and waits, on
	// the replacing lock, to resume it.
	b.paused.Store(true)
	b.DropClient()
	info := b.sb.Info()
	b.Mu.Unlock()

	start := time.Now()
	err = m.stop(ctx, pz, b.ID(), reason, keepMemory, opts.Memory == MemoryKeep)
	memory := "dropped"
	if keepMemory && err == nil {
		memory = "kept"
	}
	ev := &audit.Event{Kind: audit.KindSandboxPause, Principal: p, Session: b.Session, SandboxID: b.ID(), ContainerID: info.ContainerID,
		Summary: map[string]string{"reason": reason, "memory": memory}, Outcome: audit.OutcomeOK, DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
	}
	m.appendAudit(ctx, ev)
	m.metrics.SandboxPauses.WithLabelValues(reason, ev.Outcome).Inc()
	if err != nil {
		b.paused.Store(false) // the provider says it may still run: calls try it
		return fmt.Errorf("pause sandbox %s: %w", b.ID(), err)
	}
	// The provider's listing says when, and what it takes on disk now.
	info.State, info.PausedAt = sandbox.StatePaused, time.Now().UTC()
	if listed, err := m.provider.List(ctx, sandbox.Filter{ID: b.ID()}); err == nil && len(listed) == 1 {
		info.PausedAt, info.DiskBytes, info.MemoryKept = listed[0].PausedAt, listed[0].DiskBytes, listed[0].MemoryKept
	}
	b.Mu.Lock()
	b.sb, b.pausedAt, b.pausedFor = pausedSandbox{info: info, p: m.provider}, info.PausedAt, reason
	b.pausedBytes.Store(info.DiskBytes)
	b.Mu.Unlock()
	m.log.Info("sandbox paused", "sandbox_id", b.ID(), "reason", reason, "memory_kept", info.MemoryKept, "duration_ms", ev.DurationMs, "disk_bytes", info.DiskBytes)
	return nil
}

// stop pauses sandbox id through the provider, checkpointing its memory
// when keepMemory. A checkpoint that fails leaves the sandbox running:
// unless the memory was required, it is then paused with its files.
func (m *Fleet) stop(ctx context.Context, pz sandbox.Pauser, id, reason string, keepMemory, required bool) error {
	mp, ok := pz.(sandbox.MemoryPauser)
	if !keepMemory || !ok {
		return pz.Pause(ctx, id, reason)
	}
	err := mp.PauseKeepingMemory(ctx, id, reason)
	if err == nil || required || !errors.Is(err, sandbox.ErrCannotKeepMemory) {
		return err
	}
	m.log.Warn("sandbox memory could not be kept: pausing it with its files", "sandbox_id", id, "error", err)
	return pz.Pause(ctx, id, reason)
}

// reservePaused counts b's sandbox, as it is on disk now, against its
// tenant's paused quota until release, so that concurrent pauses cannot
// overshoot it.
func (m *Fleet) reservePaused(ctx context.Context, b *Box) (release func(), err error) {
	var bytes int64
	if infos, err := m.provider.List(ctx, sandbox.Filter{ID: b.ID()}); err == nil && len(infos) == 1 {
		bytes = infos[0].DiskBytes
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, used := m.pausedLocked(b.Tenant)
	r := m.pausing[b.Tenant]
	n, used = n+r.n, used+r.bytes
	maxN, maxBytes := m.cfg.MaxPausedPerTenant, m.cfg.MaxPausedBytesPerTenant
	if (maxN > 0 && n+1 > maxN) || (maxBytes > 0 && used+bytes > maxBytes) {
		return nil, fmt.Errorf("%w: your tenant keeps %d paused sandboxes taking %s on disk (limits %d and %s), and this one takes %s: destroy a paused one with sandbox_destroy, or destroy this one",
			ErrPausedQuota, n, sizeText(used), maxN, sizeText(maxBytes), sizeText(bytes))
	}
	m.pausing[b.Tenant] = pausedUse{n: r.n + 1, bytes: r.bytes + bytes}
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		r := m.pausing[b.Tenant]
		m.pausing[b.Tenant] = pausedUse{n: r.n - 1, bytes: r.bytes - bytes}
	}, nil
}

// pausedUse is a tenant's paused sandboxes: how many and their bytes.
type pausedUse struct {
	n     int
	bytes int64
}

// pausedLocked counts tenant's paused boxes and their bytes; m.mu is
// held.
func (m *Fleet) pausedLocked(tenant string) (n int, bytes int64) {
	for _, b := range m.byID {
		if b.Tenant == tenant && b.paused.Load() && !b.IsGone() {
			n++
			bytes += b.pausedBytes.Load()
		}
	}
	return n, bytes
}

// pausedPerTenant is every tenant's paused sandboxes and their bytes on
// disk (for /metrics).
func (m *Fleet) pausedPerTenant() map[string]pausedUse {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]pausedUse{}
	for _, b := range m.byID {
		if b.paused.Load() && !b.IsGone() {
			u := out[b.Tenant]
			out[b.Tenant] = pausedUse{n: u.n + 1, bytes: u.bytes + b.pausedBytes.Load()}
		}
	}
	return out
}

// sizeText writes n bytes for people.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}

// Resume starts b's paused sandbox again for p, on its workspace; reason
// ("call", "sandbox_resume") goes into the sandbox.resume audit record.
// It takes one of the tenant's live slots. The run it starts gets a whole
// maximum lifetime; a deadline that passed while it was paused is moved
// resumeGrace from now. The note says what the call should know. A
// sandbox that runs already (another call resumed it) gives an empty
// note.
func (m *Fleet) Resume(ctx context.Context, b *Box, p identity.Identity, reason string) (Note, error) {
	pz, ok := m.pauser()
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
	if !b.paused.Load() {
		b.Mu.Unlock()
		return Note{}, nil
	}
	pausedAt, memoryKept := b.pausedAt, b.sb.Info().MemoryKept
	b.Mu.Unlock()
	release, err := m.reserve(ctx, b.Tenant)
	if err != nil {
		return Note{}, fmt.Errorf("resume sandbox %s: %w", b.ID(), err)
	}
	defer release()

	start := time.Now()
	sb, err := pz.Resume(context.WithoutCancel(ctx), b.ID())
	ev := &audit.Event{Kind: audit.KindSandboxResume, Principal: p, Session: b.Session, SandboxID: b.ID(),
		Summary: map[string]string{"reason": reason}, Outcome: audit.OutcomeOK, DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
	}
	// What the resumed sandbox reports: its memory restored, or not.
	restored := err == nil && sb.Info().MemoryKept
	ev.Summary["memory"] = "none"
	if restored {
		ev.Summary["memory"] = "restored"
	}
	m.metrics.SandboxResumes.WithLabelValues(reason, ev.Outcome).Inc()
	if err != nil {
		m.appendAudit(ctx, ev)
		return Note{}, fmt.Errorf("resume sandbox %s: %w", b.ID(), err)
	}
	ev.ContainerID = sb.Info().ContainerID
	m.appendAudit(ctx, ev)
	now := time.Now()
	b.Mu.Lock()
	b.sb, b.gen = sb, b.gen+1
	b.paused.Store(false)
	b.pausedBytes.Store(0)
	b.Mu.Unlock()
	b.expires.Store(max(b.expires.Load(), now.Add(m.cfg.Limits.MaxLifetime).UnixNano()))
	if d := deadlineOf(b); !d.IsZero() && d.Before(now.Add(resumeGrace)) {
		if _, err := m.SetDeadline(ctx, b, now.Add(resumeGrace)); err != nil {
			m.log.Warn("move a resumed sandbox's passed timeout", "sandbox_id", b.ID(), "error", err)
		}
	}
	b.touch()
	m.log.Info("sandbox resumed", "sandbox_id", b.ID(), "reason", reason, "memory_restored", restored, "duration_ms", ev.DurationMs)
	meta := map[string]any{"sandbox_id": b.ID(), "memory_restored": restored}
	since := "before the gateway restarted"
	if !pausedAt.IsZero() {
		meta["paused_at"] = pausedAt.UTC().Format(time.RFC3339)
		since = "since " + pausedAt.UTC().Format(time.RFC3339)
	}
	what := "/workspace is as it was; processes, /tmp and interpreter state from before the pause are gone"
	switch {
	case restored:
		what = "its memory was restored: processes, /tmp, interpreter state and the browser carry on where they were"
	case memoryKept:
		what = "its memory could not be restored, so it started afresh: /workspace is as it was; processes, /tmp and interpreter state from before the pause are gone"
	}
	return Note{Key: MetaSandboxResumed, Meta: meta,
		Text: fmt.Sprintf("[sandbox %s was paused (%s) and was resumed for this call: %s]", b.ID(), since, what)}, nil
}

// lifetimeAfterResume is the maximum lifetime's end of a sandbox
// described by info: its recorded end, or a whole lifetime from its
// last resume when that is later.
func (m *Fleet) lifetimeAfterResume(info sandbox.Info) time.Time {
	if info.ResumedAt.IsZero() {
		return info.ExpiresAt
	}
	return maxTime(info.ExpiresAt, info.ResumedAt.Add(m.cfg.Limits.MaxLifetime))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
