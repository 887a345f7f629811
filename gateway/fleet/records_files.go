package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/sandbox"
)

// fileRecords are a single gateway's records: files under VarDir
// (sandboxfiles.go), one per sandbox and kind (claims.go, netstate.go,
// deadline.go). The gateway holds the instance lock, so every sandbox
// the provider lists is its own: one it does not track was lost track of
// and is removed, and nobody else uses or changes its sandboxes.
type fileRecords struct{ m *Fleet }

// adoptAll drops the files of sandboxes that are gone, removes
// session-bound, expired, ownerless and unclaimed pooled sandboxes and
// adopts the rest (see Fleet.Reconcile).
func (r fileRecords) adoptAll(ctx context.Context, infos []sandbox.Info) {
	m := r.m
	m.allowFiles().dropStale(infos)
	m.dropStaleClaims(infos)
	m.deadlineFiles().dropStale(infos)
	now := time.Now()
	for _, info := range infos {
		if info.Pool != "" {
			c, ok, err := m.loadClaim(info.ID)
			if err != nil {
				m.log.Warn("pooled sandbox's claim unreadable; removing it", "sandbox_id", info.ID, "error", err)
			}
			if !ok {
				m.removeOrphan(ctx, info, "unclaimed pooled")
				continue
			}
			info = c.apply(info)
		}
		paused := info.State == sandbox.StatePaused
		switch {
		case info.Owner == "":
			m.removeOrphan(ctx, info, "orphaned")
		case paused && !info.PausedAt.IsZero() && now.Sub(info.PausedAt) > m.cfg.PausedRetention:
			m.removeOrphan(ctx, info, reasonRetention)
		case paused:
			// Its files are what pausing keeps, whatever became of its
			// session: adopted (adoptee), its owner resumes it by id.
			m.adopt(ctx, info)
		case now.After(m.lifetimeAfterResume(info)) || (info.Session != "" && !m.Pauses()):
			m.removeOrphan(ctx, info, "orphaned")
		default:
			m.adopt(ctx, info)
		}
	}
}

func (fileRecords) listFilter() sandbox.Filter { return sandbox.Filter{} }

// untracked removes a sandbox the gateway lost track of (a container
// whose create outlived its caller), once it is older than any create
// takes.
func (r fileRecords) untracked(ctx context.Context, info sandbox.Info, now time.Time) {
	if now.Sub(info.CreatedAt) >= r.m.cfg.ReconcileGrace {
		r.m.removeOrphan(ctx, info, "untracked")
	}
}

func (fileRecords) listed(*Box, sandbox.Info, time.Time) {}

// unlisted keeps the box: its container is gone from under it, and its
// owner's next call replaces it.
func (fileRecords) unlisted(*Box) {}

func (fileRecords) lookup(_ context.Context, _, _, id string) (*Box, error) {
	return nil, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
}

func (fileRecords) findDefault(context.Context, identity.Identity, string) (*Box, error) {
	return nil, nil
}

func (fileRecords) settleDefault(_ context.Context, _ identity.Identity, _ string, b *Box, err error) (*Box, bool, error) {
	return b, true, err
}

func (r fileRecords) owned(_ context.Context, p identity.Identity) ([]*Box, error) {
	return r.m.Matching(func(b *Box) bool { return b.Owner == p.Digest() && b.Session == "" }), nil
}

// holds counts the tenant's tracked boxes that are not paused,
// destroyed ones whose removal is still under way included.
func (r fileRecords) holds(_ context.Context, tenant string) (func() int, error) {
	return func() int {
		n := 0
		for _, b := range r.m.byID {
			if b.Tenant == tenant && !b.paused.Load() {
				n++
			}
		}
		return n
	}, nil
}

func (fileRecords) admit(context.Context, *Box, identity.Identity) error { return nil }

// kept reads the allowlist last set with sandbox_network (the labels
// hold the one it was created with) and the deadline its owner set.
func (r fileRecords) kept(info sandbox.Info) ([]string, time.Time) {
	m, list := r.m, info.Network
	if changed, ok, err := m.loadAllow(info.ID); err != nil {
		m.log.Warn("read a sandbox's changed network allowlist; it gets none", "sandbox_id", info.ID, "error", err)
		list = nil
	} else if ok {
		list = changed
	}
	deadline, err := m.loadDeadline(info.ID)
	if err != nil {
		m.log.Warn("read a sandbox's timeout; it lives until its maximum lifetime", "sandbox_id", info.ID, "error", err)
	}
	return list, deadline
}

func (r fileRecords) saveDeadline(_ context.Context, id string, t time.Time) error {
	return r.m.deadlineFiles().save(id, []byte(t.UTC().Format(time.RFC3339Nano)))
}

func (r fileRecords) setAllow(_ context.Context, b *Box, rules policy.Rules) (string, error) {
	return "", b.Gate.Update(rules, func(rules policy.Rules) error { return r.m.saveAllow(b.ID(), rules) })
}

func (fileRecords) refresh(context.Context, *Box) error   { return nil }
func (fileRecords) refreshDeadline(context.Context, *Box) {}

func (r fileRecords) removed(id string) {
	r.m.allowFiles().drop(id)
	r.m.claimFiles().drop(id)
	r.m.deadlineFiles().drop(id)
}

// claim writes the claim file, durably, before sb is handed out.
func (r fileRecords) claim(_ context.Context, sb sandbox.Sandbox, spec sandbox.Spec) (sandbox.Info, error) {
	c := claimOf(spec, time.Now())
	if err := r.m.saveClaim(sb.ID(), c); err != nil {
		return sandbox.Info{}, err
	}
	return c.apply(sb.Info()), nil
}

// pooled creates the claim file empty, so that the claim a new session
// waits for is one write and one flush.
func (r fileRecords) pooled(id string) error { return r.m.claimFiles().reserve(id) }

func (fileRecords) poolShared() bool                               { return false }
func (fileRecords) touch(context.Context, string, time.Time) error { return nil }
func (fileRecords) wire(*Box)                                      {}
func (fileRecords) beforeSweep()                                   {}

func (fileRecords) spare(context.Context, *Box, string, time.Time) bool { return false }

func (fileRecords) removedDuringCall(context.Context, *Box, error) bool { return false }
