package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/workspace"
)

var _ sandbox.Snapshotter = (*Provider)(nil)

// Snapshot copies sandbox id's workspace image into snapshot snap
// (workspace.Manager.Snapshot: the file system frozen for the copy, a
// clone where the host's file system can, else its data extents).
func (p *Provider) Snapshot(ctx context.Context, id, snap string) (int64, error) {
	start := time.Now()
	if !p.ws.Durable() {
		return 0, fmt.Errorf("snapshot sandbox %s: workspaces are in memory on this host (%s): nothing on disk to copy", id, p.ws.Reason())
	}
	if _, err := p.findOne(ctx, id, "snapshot"); err != nil {
		return 0, err
	}
	n, err := p.ws.Snapshot(ctx, id, snap)
	if err != nil {
		return 0, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	p.log.Info("sandbox snapshot taken", "sandbox_id", id, "snapshot", snap, "bytes", n, "duration_ms", time.Since(start).Milliseconds())
	return n, nil
}

// DeleteSnapshot removes snapshot snap.
func (p *Provider) DeleteSnapshot(_ context.Context, snap string) error {
	err := p.ws.DeleteSnapshot(snap)
	if errors.Is(err, workspace.ErrNoSnapshot) {
		return fmt.Errorf("%w: %w", sandbox.ErrNoSnapshot, err)
	}
	return err
}
