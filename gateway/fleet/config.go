package fleet

import (
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/sandbox"
)

// Config is what the fleet needs of the gateway's configuration; the
// gateway fills it from its own (gateway.Config.Fleet) with defaults
// already applied.
type Config struct {
	// VarDir holds the single-gateway records: claims, network
	// allowlists and deadlines, one file per sandbox.
	VarDir string
	// Image is the default sandbox image.
	Image string
	// Pool is how many started sandboxes to keep ready per image.
	Pool map[string]int
	// Limits apply to every sandbox.
	Limits sandbox.Limits
	// MaxSandboxesPerTenant bounds one tenant's live sandboxes (0: none).
	MaxSandboxesPerTenant int
	// OnIdle is what happens to a sandbox idle for Limits.IdleTTL or
	// past its maximum lifetime: OnIdlePause (pause.go; the default) or
	// OnIdleDestroy. A provider that cannot pause destroys.
	OnIdle string
	// PausedRetention is how long a paused sandbox is kept before it is
	// destroyed.
	PausedRetention time.Duration
	// MaxPausedPerTenant and MaxPausedBytesPerTenant bound one tenant's
	// paused sandboxes: how many, and what they take on disk (0: none).
	MaxPausedPerTenant      int
	MaxPausedBytesPerTenant int64
	// MaxSnapshotsPerTenant and MaxSnapshotBytesPerTenant bound one
	// tenant's snapshots (0: none).
	MaxSnapshotsPerTenant     int
	MaxSnapshotBytesPerTenant int64
	// ReconcileInterval is how often the fleet compares itself with the
	// provider; ReconcileGrace is how old an unknown sandbox must be
	// before it is removed.
	ReconcileInterval time.Duration
	ReconcileGrace    time.Duration
	// EgressPolicy and EgressLimits give each sandbox its allowlist's
	// default and its connection limits.
	EgressPolicy egress.Tenants
	EgressLimits egress.Limits
	// Replicated says other gateways share the provider's sandboxes
	// (replicas.go); records then live in the provider.
	Replicated bool
}

// What Config.OnIdle may say.
const (
	OnIdlePause   = "pause"
	OnIdleDestroy = "destroy"
)

// ClaimDir holds a single gateway's warm-pool claims.
func (c Config) ClaimDir() string { return filepath.Join(c.VarDir, "claims") }

// NetworkDir holds a single gateway's per-sandbox egress allowlists.
func (c Config) NetworkDir() string { return filepath.Join(c.VarDir, "network") }

// DeadlineDir holds a single gateway's per-sandbox E2B deadlines.
func (c Config) DeadlineDir() string { return filepath.Join(c.VarDir, "deadline") }

// SnapshotDir holds the snapshots' records (snapshots.go).
func (c Config) SnapshotDir() string { return filepath.Join(c.VarDir, "snapshots") }

// Pooling reports whether c keeps any warm pool.
func (c Config) Pooling() bool {
	for _, n := range c.Pool {
		if n > 0 {
			return true
		}
	}
	return false
}
