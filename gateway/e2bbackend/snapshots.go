package e2bbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/sandbox"
)

func snapshotOf(r fleet.SnapshotRecord) e2b.Snapshot {
	return e2b.Snapshot{ID: r.ID, Names: []string{r.Name}}
}

// CreateSnapshot copies one of the caller's sandboxes' files into a new
// snapshot of the caller's tenant.
func (e e2bBackend) CreateSnapshot(ctx context.Context, id, name string) (e2b.Snapshot, error) {
	var out e2b.Snapshot
	err := e.control(ctx, "sandbox.snapshot", map[string]any{"sandbox_id": id, "name": name}, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		r, err := e.g.boxes.Snapshot(ctx, b, p, name)
		if err != nil {
			return snapshotErr(err)
		}
		out = snapshotOf(r)
		return nil
	})
	return out, err
}

// ListSnapshots lists the caller's tenant's snapshots.
func (e e2bBackend) ListSnapshots(ctx context.Context, sandboxID, name string) ([]e2b.Snapshot, error) {
	var out []e2b.Snapshot
	err := e.control(ctx, "snapshot.list", nil, nil, func(_ context.Context, p identity.Identity) error {
		for _, r := range e.g.boxes.Snapshots(p) {
			if (sandboxID == "" || r.SandboxID == sandboxID) && (name == "" || r.Name == name) {
				out = append(out, snapshotOf(r))
			}
		}
		return nil
	})
	return out, err
}

// DeleteSnapshot deletes one of the caller's tenant's snapshots, named by
// id or name.
func (e e2bBackend) DeleteSnapshot(ctx context.Context, id string) error {
	return e.control(ctx, "snapshot.delete", map[string]any{"snapshot_id": id}, nil, func(ctx context.Context, p identity.Identity) error {
		r, err := e.snapshot(p, id)
		if err != nil {
			return err
		}
		return snapshotErr(e.g.boxes.DeleteSnapshot(ctx, p, r.ID, "e2b deleteSnapshot"))
	})
}

// snapshot finds p's tenant's snapshot by id or, the newest of that
// name, by name.
func (e e2bBackend) snapshot(p identity.Identity, ref string) (fleet.SnapshotRecord, error) {
	if r, err := e.g.boxes.SnapshotFor(p, ref); err == nil {
		return r, nil
	}
	var found *fleet.SnapshotRecord
	for _, r := range e.g.boxes.Snapshots(p) {
		if r.Name == ref {
			found = &r
		}
	}
	if found == nil {
		return fleet.SnapshotRecord{}, fmt.Errorf("snapshot %q: %w", ref, sandbox.ErrNoSnapshot)
	}
	return *found, nil
}

// Fork makes count sandboxes from one of the caller's.
func (e e2bBackend) Fork(ctx context.Context, id string, count int, timeout time.Duration) ([]e2b.Forked, error) {
	var out []e2b.Forked
	err := e.control(ctx, "sandbox.fork", map[string]any{"sandbox_id": id, "count": count}, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		boxes, errs, err := e.g.boxes.Fork(ctx, b, p, count)
		if err != nil {
			return snapshotErr(err)
		}
		out = make([]e2b.Forked, len(boxes))
		for i, fb := range boxes {
			if errs[i] != nil {
				out[i].Err = categorize(errs[i])
				continue
			}
			if timeout > 0 {
				if _, err := e.g.boxes.SetDeadline(ctx, fb, time.Now().Add(timeout)); err != nil {
					_ = e.g.boxes.Destroy(ctx, fb, p, "its timeout could not be kept")
					out[i].Err = err
					continue
				}
			}
			out[i].Sandbox = e.describe(fb, p)
		}
		return nil
	})
	return out, err
}

// snapshotErr gives the fleet's snapshot errors the API's categories.
func snapshotErr(err error) error {
	switch {
	case errors.Is(err, fleet.ErrSnapshotQuota):
		return fmt.Errorf("%w: %v", e2b.ErrQuota, err)
	case errors.Is(err, fleet.ErrCannotSnapshot):
		return fmt.Errorf("%w: %v", e2b.ErrUnsupported, err)
	case errors.Is(err, fleet.ErrBadSnapshotRequest):
		return fmt.Errorf("%w: %v", e2b.ErrInvalid, err)
	}
	return err
}
