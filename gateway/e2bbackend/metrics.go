package e2bbackend

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/runner/protocol"
)

// cpuSampleInterval is how far apart Metrics reads the sandbox's CPU
// time: the runner reports only the total since the sandbox started,
// and the gateway keeps no history, so a rate needs two readings.
const cpuSampleInterval = 200 * time.Millisecond

// Metrics samples one of the caller's sandboxes through its runner's
// info operation (what sandbox_info reports), falling back to its
// limits for the totals the runner cannot read (no cgroup, no statfs).
func (e e2bBackend) Metrics(ctx context.Context, id string) (e2b.Metrics, error) {
	var out e2b.Metrics
	err := e.control(ctx, "sandbox.metrics", map[string]any{"sandbox_id": id}, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		if b.Paused() {
			// Sampling must not resume it.
			return fmt.Errorf("sample sandbox %s: %w", id, e2b.ErrPaused)
		}
		// connect, not acquire: looking at a sandbox does not make it
		// busy, nor put off its idle timeout.
		c, err := b.Connect(ctx)
		if err != nil {
			return fmt.Errorf("sample sandbox %s: %w", id, err)
		}
		out, err = e.sample(ctx, c)
		return err
	})
	return out, err
}

// sample reads the runner's info twice, cpuSampleInterval apart.
func (e e2bBackend) sample(ctx context.Context, c *protocol.Client) (e2b.Metrics, error) {
	var first, last protocol.Info
	if err := c.Call(ctx, protocol.OpInfo, nil, &first); err != nil {
		return e2b.Metrics{}, fmt.Errorf("read the sandbox's resource use: %w", err)
	}
	began := time.Now()
	select {
	case <-ctx.Done():
		return e2b.Metrics{}, ctx.Err()
	case <-time.After(cpuSampleInterval):
	}
	if err := c.Call(ctx, protocol.OpInfo, nil, &last); err != nil {
		return e2b.Metrics{}, fmt.Errorf("read the sandbox's resource use: %w", err)
	}
	now := time.Now()
	l := e.g.cfg.Limits
	cpus := l.CPUs
	if cpus <= 0 {
		cpus = 1 // unlimited: report against one CPU rather than divide by zero
	}
	// E2B's memUsed leaves out the page cache, which it reports apart
	// (envd's are the guest's used and cached memory).
	cache := min(last.MemoryCache, last.MemoryUsage)
	m := e2b.Metrics{At: now, CPUCount: int(math.Ceil(cpus)),
		MemUsed: last.MemoryUsage - cache, MemCache: cache, MemTotal: cmp.Or(last.MemoryLimit, l.MemoryBytes),
		DiskUsed: last.WorkspaceUsedBytes, DiskTotal: cmp.Or(last.WorkspaceSizeBytes, l.WorkspaceBytes)}
	if used := last.CPUUsageMs - first.CPUUsageMs; used > 0 {
		wall := float64(now.Sub(began).Milliseconds())
		m.CPUUsedPct = min(100*float64(used)/(wall*cpus), 100)
	}
	return m, nil
}
