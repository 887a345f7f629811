package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// Deadlines: the end an E2B client set on a sandbox (its timeout,
// box.deadline), earlier than its maximum lifetime. Labels cannot change
// on a running container, so, as a changed allowlist (netstate.go), it
// is kept in a file per sandbox under Config.DeadlineDir for a single
// gateway, which a restarted gateway reads when it adopts the sandbox,
// and in the provider's record (Recorder.SetDeadline) for replicated
// gateways, where every replica reads it: the one that looks the sandbox
// up, and reconciliation, which brings tracked boxes' deadlines up to
// date and removes an untracked sandbox whose deadline passed (due).
// A replica re-reads the record before it removes a box for its
// deadline, since another may have extended it since.

// reasonDeadline is why a sandbox whose owner's timeout passed was removed.
const reasonDeadline = "timeout set by its owner"

// SetDeadline saves t as b's end, then makes b end then (armDeadline),
// and returns when b will end. Saved first: a timeout the client was
// told about survives a restart.
func (m *Fleet) SetDeadline(ctx context.Context, b *Box, t time.Time) (time.Time, error) {
	if err := m.records.saveDeadline(ctx, b.ID(), t); err != nil {
		return time.Time{}, fmt.Errorf("keep the sandbox's timeout: %w", err)
	}
	return m.armDeadline(b, t), nil
}

// armDeadline makes b end at t (box.setDeadline; zero: at its maximum
// lifetime) and removes it then.
func (m *Fleet) armDeadline(b *Box, t time.Time) time.Time {
	return b.SetDeadline(t, func() { m.expire(b) })
}

// expire pauses or removes b once its deadline passed (expireBox),
// unless it was extended: by this gateway since the timer was set, or by
// another replica (its record says a later one, which b then gets). A
// paused sandbox has no deadline running.
func (m *Fleet) expire(b *Box) {
	if time.Now().Before(b.EndAt()) || b.IsGone() || b.Paused() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if m.records.spare(ctx, b, reasonDeadline, time.Now()) {
		return
	}
	m.expireBox(ctx, b, reasonDeadline, nil)
}

// deadlineMoved reports whether b, whose deadline passed here, must be
// spared: its record holds a later deadline (or none), which b gets, or
// the record cannot be read (the sweep retries). A box whose record is
// gone was removed elsewhere: it is forgotten, and spared.
func (m *Fleet) deadlineMoved(ctx context.Context, b *Box, now time.Time) bool {
	info, err := m.Record(ctx, b.ID())
	switch {
	case isNotFound(err):
		m.forget(b)
		return true
	case err != nil:
		m.log.Warn("read a timed-out sandbox's deadline; keeping it until the next sweep", "sandbox_id", b.ID(), "error", err)
		return true
	case !info.Deadline.IsZero() && !info.Deadline.After(now):
		return false
	}
	m.armDeadline(b, info.Deadline)
	m.log.Info("sandbox's timeout extended by another replica", "sandbox_id", b.ID(), "deadline", info.Deadline)
	return true
}

// SyncDeadline gives b the deadline d, read from a record at listedAt or
// later, unless this gateway set b's deadline since listedAt (d may
// predate that).
func (m *Fleet) SyncDeadline(b *Box, d time.Time, listedAt time.Time) {
	if time.Unix(0, b.deadlineWritten.Load()).After(listedAt) || deadlineOf(b).Equal(d) {
		return
	}
	m.armDeadline(b, d)
	m.log.Info("sandbox's timeout changed by another replica", "sandbox_id", b.ID(), "deadline", d)
}

// deadlineOf is b's deadline, zero for none.
func deadlineOf(b *Box) time.Time {
	if d := b.deadline.Load(); d != 0 {
		return time.Unix(0, d)
	}
	return time.Time{}
}

// ended reports whether the sandbox info describes is past its maximum
// lifetime or its owner's deadline.
func ended(info sandbox.Info, now time.Time) bool {
	return !info.ExpiresAt.After(now) || !info.Deadline.IsZero() && !info.Deadline.After(now)
}

// loadDeadline returns the deadline saved for id, zero if none was.
func (m *Fleet) loadDeadline(id string) (time.Time, error) {
	data, ok, err := m.deadlineFiles().load(id)
	if !ok {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(data)))
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", m.deadlineFiles().path(id), err)
	}
	return t, nil
}
