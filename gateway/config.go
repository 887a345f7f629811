package gateway

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/manifest"
	"github.com/sandgate/sandgate/gateway/mcpedge"
	"github.com/sandgate/sandgate/gateway/tools"
	"github.com/sandgate/sandgate/sandbox"
)

// Config is the gateway's whole configuration. cmd/gateway fills it from
// flags and environment; tests fill it directly.
type Config struct {
	// Addr is the listen address, e.g. 127.0.0.1:8080.
	Addr string
	// VarDir holds the audit log and the per-sandbox socket directories.
	VarDir string
	// Image is the default sandbox image; Images lists the images a
	// client may ask for in sandbox_create (Image is always allowed).
	Image  string
	Images []string
	// Pool is how many started sandboxes to keep ready per image (the
	// warm pool); nil or zero: none. Every image in it must be allowed.
	Pool map[string]int
	// Limits apply to every sandbox; zero fields take sandbox.DefaultLimits.
	Limits sandbox.Limits
	// MaxSandboxesPerTenant bounds how many live sandboxes one tenant may
	// hold at once; ToolCallsPerMinute bounds its tool call rate.
	MaxSandboxesPerTenant int
	ToolCallsPerMinute    int
	// OnIdle is what happens to a sandbox idle for Limits.IdleTTL or
	// past its maximum lifetime: "pause" (the default: its files are
	// kept, and the next call resumes it) or "destroy". PausedRetention
	// (default 7 days) is how long a paused sandbox is kept, and
	// MaxPausedPerTenant (default 100) and MaxPausedBytesPerTenant
	// (default 20 GiB) bound one tenant's paused sandboxes.
	OnIdle                  string
	PausedRetention         time.Duration
	MaxPausedPerTenant      int
	MaxPausedBytesPerTenant int64
	// MaxSnapshotsPerTenant (default 100) and MaxSnapshotBytesPerTenant
	// (default 20 GiB) bound one tenant's snapshots.
	MaxSnapshotsPerTenant     int
	MaxSnapshotBytesPerTenant int64
	// Categories enables tool categories (files, exec, code, sandbox,
	// audit, browser); empty means all. DisabledTools removes single tools by name
	// and EnabledTools, when not empty, keeps only the named tools.
	Categories    []string
	EnabledTools  []string
	DisabledTools []string
	// Auth verifies bearer tokens on /mcp and serves the protected
	// resource metadata. Nil leaves authentication off: one local
	// principal, and the gateway listens on loopback only.
	Auth *resource.Server
	// AuthServer, when set, is the embedded authorization server; the
	// gateway serves it on its own origin at AuthRoutes (mux patterns).
	AuthServer http.Handler
	AuthRoutes []string
	// BodyReadTimeout bounds reading one request body (default 90 s:
	// the 90 MiB body limit at 1 MB/s).
	BodyReadTimeout time.Duration
	// AllowedOrigins lists browser origins (scheme://host[:port]) allowed
	// besides the gateway's own; any other Origin gets 403.
	AllowedOrigins []string
	// ReconcileInterval is how often the gateway compares its sandboxes
	// with the provider's and removes what it lost track of (default 1
	// min); ReconcileGrace is how old an unknown sandbox must be before
	// that (default 2 min, longer than any create takes).
	ReconcileInterval time.Duration
	ReconcileGrace    time.Duration
	// Egress is what sandboxes may reach through the gateway's egress
	// proxy; the zero value allows nothing, as a sandbox without network.
	Egress EgressConfig
	// Replicated says that other gateway replicas share this provider's
	// sandboxes (several gateways of one Kubernetes instance). The
	// gateway then keeps nothing about a sandbox that another replica
	// needs in its own memory or files: it finds sandboxes it does not
	// know in the provider, counts quotas there, records uses,
	// allowlists and E2B timeouts there (the provider must be a
	// sandbox.Recorder), removes
	// only what is due whoever holds it, and leaves sessionless sandboxes
	// running when it shuts down. See gateway/fleet/replicas.go.
	Replicated bool
	// E2B configures the E2B-compatible API (package gateway/e2b).
	E2B E2BConfig
	// ToolsDir is a directory of custom tool manifests (package
	// gateway/manifest), watched while the gateway runs; "" serves none.
	ToolsDir string
}

// E2BConfig configures the E2B-compatible HTTP API.
type E2BConfig struct {
	// Disabled turns the API off; its routes then answer 404.
	Disabled bool
	// Templates maps E2B template ids (what Sandbox.create names) to
	// images sandboxes may use; any allowed image also works by its own
	// name. Nil takes DefaultTemplates.
	Templates map[string]string
	// APIKey maps an X-API-KEY to its principal; nil accepts no keys
	// (OAuth bearer tokens still work, and with authentication off any
	// key is the local principal).
	APIKey func(key string) (identity.Identity, error)
	// AccessKey signs sandbox access tokens (gateway/e2bbackend/accesstoken.go). Replicas
	// must share it, and it must outlive restarts for tokens to; empty
	// gets a random key, valid for this process only.
	AccessKey []byte
	// OwnerRevoked reports whether the credential that owns the
	// sandboxes of an owner digest (identity.Identity.Digest) was revoked: an API
	// key (`gateway apikey revoke`). Their access tokens then stop at
	// once. An error counts as revoked. nil: never.
	OwnerRevoked func(owner string) (bool, error)
}

// DefaultTemplates are the E2B templates every gateway serves with its
// default image: the SDKs' defaults (e2b's "base", the code
// interpreter's "code-interpreter-v1"). The default image has Python,
// numpy and matplotlib for the interpreter.
func DefaultTemplates(image string) map[string]string {
	return map[string]string{"base": image, "code-interpreter-v1": image, "code-interpreter": image}
}

// EgressConfig configures sandboxes' network access (package egress).
type EgressConfig struct {
	// Policy holds the operator's ceilings and sandbox defaults.
	Policy egress.Tenants
	// Limits bound each sandbox's connections; zero fields take
	// egress.DefaultLimits.
	Limits egress.Limits
	// Resolver resolves destinations; nil is the system resolver.
	Resolver egress.Resolver
	// Testing holds allowances for tests only; cmd/gateway never sets it.
	Testing *egress.Testing
}

// WithDefaults returns c with empty fields filled in.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.VarDir == "" {
		c.VarDir = "var"
	}
	if c.Image == "" {
		c.Image = "sandgate/base:latest"
	}
	if !slices.Contains(c.Images, c.Image) {
		c.Images = append([]string{c.Image}, c.Images...)
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = 90 * time.Second
	}
	if c.MaxSandboxesPerTenant == 0 {
		c.MaxSandboxesPerTenant = 10
	}
	if c.ToolCallsPerMinute == 0 {
		c.ToolCallsPerMinute = 600
	}
	c.OnIdle = cmp.Or(c.OnIdle, fleet.OnIdlePause)
	if c.PausedRetention == 0 {
		c.PausedRetention = DefaultPausedRetention
	}
	if c.MaxPausedPerTenant == 0 {
		c.MaxPausedPerTenant = DefaultMaxPausedPerTenant
	}
	if c.MaxPausedBytesPerTenant == 0 {
		c.MaxPausedBytesPerTenant = DefaultMaxPausedBytesPerTenant
	}
	if c.MaxSnapshotsPerTenant == 0 {
		c.MaxSnapshotsPerTenant = DefaultMaxSnapshotsPerTenant
	}
	if c.MaxSnapshotBytesPerTenant == 0 {
		c.MaxSnapshotBytesPerTenant = DefaultMaxSnapshotBytesPerTenant
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = time.Minute
	}
	if c.ReconcileGrace == 0 {
		// Longer than any Create takes (container create 30 s + runner
		// start 15 s), so a sandbox being made is never taken for an orphan.
		c.ReconcileGrace = 2 * time.Minute
	}
	if c.E2B.Templates == nil {
		c.E2B.Templates = DefaultTemplates(c.Image)
	}
	c.Limits = c.Limits.WithDefaults()
	c.Egress.Limits = c.Egress.Limits.WithDefaults()
	return c
}

// Validate reports the first problem with c, in words that say what to
// change.
func (c Config) Validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w (want host:port, e.g. 127.0.0.1:8080)", c.Addr, err)
	}
	// Without authentication everyone who can connect is the one local
	// principal; only loopback keeps that to this machine.
	if c.Auth == nil && !IsLoopback(host) {
		return fmt.Errorf("listen address %q is not loopback: the gateway has no authentication configured, so it only listens on 127.0.0.1, ::1 or localhost", c.Addr)
	}
	if c.VarDir == "" {
		return errors.New("var directory must not be empty")
	}
	for _, cat := range c.Categories {
		if !slices.Contains(tools.AllCategories, cat) {
			return fmt.Errorf("unknown tool category %q (known: %s)", cat, strings.Join(tools.AllCategories, ", "))
		}
	}
	for _, name := range append(slices.Clone(c.EnabledTools), c.DisabledTools...) {
		if !slices.Contains(tools.AllToolNames(), name) {
			return fmt.Errorf("unknown tool %q (known: %s)", name, strings.Join(tools.AllToolNames(), ", "))
		}
	}
	if err := c.Egress.Limits.Validate(); err != nil {
		return err
	}
	if c.OnIdle != fleet.OnIdlePause && c.OnIdle != fleet.OnIdleDestroy {
		return fmt.Errorf("on-idle %q: want pause (keep an idle sandbox's files, resume it on the next call) or destroy", c.OnIdle)
	}
	if c.PausedRetention < time.Minute {
		return fmt.Errorf("paused retention %v: want at least a minute (default %v)", c.PausedRetention, DefaultPausedRetention)
	}
	if c.ToolsDir != "" {
		if fi, err := os.Stat(c.ToolsDir); err != nil || !fi.IsDir() {
			return fmt.Errorf("tools directory %q is not a directory: give the directory of custom tool manifests (--tools-dir)", c.ToolsDir)
		}
	}
	for image, n := range c.Pool {
		if n < 0 || n > MaxPoolSize {
			return fmt.Errorf("warm pool of %s: %d sandboxes; want 0 to %d", image, n, MaxPoolSize)
		}
		if !slices.Contains(c.Images, image) {
			return fmt.Errorf("warm pool of %s: not an image sandboxes may use (add it to --images)", image)
		}
	}
	for id, image := range c.E2B.Templates {
		if !slices.Contains(c.Images, image) {
			return fmt.Errorf("E2B template %s: image %s is not one sandboxes may use (add it to --images)", id, image)
		}
	}
	l := c.Limits
	if l.CPUs <= 0 || l.MemoryBytes < 16<<20 || l.Pids < 8 || l.CallTimeout <= 0 {
		return fmt.Errorf("limits too small: cpus %.2f, memory %d bytes (min 16 MiB), pids %d (min 8), call timeout %s", l.CPUs, l.MemoryBytes, l.Pids, l.CallTimeout)
	}
	if l.WorkspaceBytes < 16<<20 {
		return fmt.Errorf("workspace size %d bytes is below the 16 MiB minimum; raise --workspace-size", l.WorkspaceBytes)
	}
	// With a disk workspace; New checks again once it knows whether the
	// provider's workspaces are in RAM.
	return checkMemory(l, false)
}

// IsLoopback reports whether host (a name or an IP, no port) is this
// machine's loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// AuditPath is where the audit log lives.
func (c Config) AuditPath() string { return filepath.Join(c.VarDir, "audit", "audit.jsonl") }

// DefaultPoolSize is how many sandboxes of the default image cmd/gateway
// keeps ready unless told otherwise: enough that a burst of 50 new
// sessions all start from the pool. An idle pooled sandbox costs a few
// MiB of memory (see the README's density numbers); the pool pauses
// refilling when the host runs short (memoryAllows).
const DefaultPoolSize = 64

// DefaultReplicaPoolSize is DefaultPoolSize of a replicated gateway
// (Kubernetes): each replica keeps its own pool, and every pooled pod
// takes one of its node's pod slots (110 by default, 80 sandboxes per
// node at the default limits on the local cluster), so two replicas
// with 64 each would fill a small cluster with idle pods.
const DefaultReplicaPoolSize = 8

// MaxPoolSize bounds one image's pool.
const MaxPoolSize = 1000

// ErrPoolReplicated refuses a warm pool to replicated gateways whose
// provider cannot record claims itself (sandbox.PoolClaims): a claim
// written to a file under one replica's VAR (gateway/fleet/claims.go) is unknown to
// the other replicas, which would remove the claimed sandbox as an
// unclaimed one.
var ErrPoolReplicated = errors.New("a warm pool of replicated gateways needs a provider that records who claimed a pooled sandbox where every replica reads it (sandbox.PoolClaims); set the pool size to 0")

// SocketDir is where per-sandbox socket directories are made.
func (c Config) SocketDir() string { return filepath.Join(c.VarDir, "sockets") }

// fleet is what the sandbox bookkeeping needs of c (package fleet).
// ManifestOptions is the policy custom tool manifests are checked
// against under cfg; `gateway tools check` uses it too.
func ManifestOptions(cfg Config) manifest.Options {
	cfg = cfg.WithDefaults()
	return tools.ManifestOptions(cfg.Limits.CallTimeout, mcpedge.CheckInputSchema)
}

// tools is the tools' part of c; New adds what the gateway builds.
func (c Config) tools() tools.Config {
	return tools.Config{Image: c.Image, Images: c.Images, Limits: c.Limits, ToolCallsPerMinute: c.ToolCallsPerMinute,
		Categories: c.Categories, EnabledTools: c.EnabledTools, DisabledTools: c.DisabledTools,
		EgressPolicy: c.Egress.Policy, EgressLimits: c.Egress.Limits, ToolsDir: c.ToolsDir}
}

// Defaults of the paused sandboxes' retention and quotas.
const (
	DefaultPausedRetention                 = 7 * 24 * time.Hour
	DefaultMaxPausedPerTenant              = 100
	DefaultMaxPausedBytesPerTenant   int64 = 20 << 30
	DefaultMaxSnapshotsPerTenant           = 100
	DefaultMaxSnapshotBytesPerTenant int64 = 20 << 30
)

func (c Config) fleet() fleet.Config {
	return fleet.Config{VarDir: c.VarDir, Image: c.Image, Pool: c.Pool, Limits: c.Limits,
		MaxSandboxesPerTenant: c.MaxSandboxesPerTenant, OnIdle: c.OnIdle, PausedRetention: c.PausedRetention,
		MaxPausedPerTenant: c.MaxPausedPerTenant, MaxPausedBytesPerTenant: c.MaxPausedBytesPerTenant,
		MaxSnapshotsPerTenant: c.MaxSnapshotsPerTenant, MaxSnapshotBytesPerTenant: c.MaxSnapshotBytesPerTenant, ReconcileInterval: c.ReconcileInterval, ReconcileGrace: c.ReconcileGrace,
		EgressPolicy: c.Egress.Policy, EgressLimits: c.Egress.Limits, Replicated: c.Replicated}
}
