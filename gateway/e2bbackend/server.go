package e2bbackend

import (
	"context"
	"crypto/rand"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/sandbox"
)

// Config is what the E2B adapter needs of the gateway.
type Config struct {
	Fleet   *fleet.Fleet
	Audit   audit.Sink
	Log     *slog.Logger
	Metrics *metrics.Metrics

	// Image is the default image; Images the ones a client may name;
	// Templates maps E2B template ids to images.
	Image     string
	Images    []string
	Templates map[string]string
	// Limits are every sandbox's, reported to clients.
	Limits sandbox.Limits

	// Auth verifies OAuth bearer tokens; nil: authentication is off and
	// every caller is Local.
	Auth  *resource.Server
	Local identity.Identity
	// APIKey maps an X-API-KEY to its identity; nil accepts no keys.
	APIKey func(key string) (identity.Identity, error)
	// AccessKey signs sandbox access tokens; empty gets a random key,
	// valid for this process only.
	AccessKey []byte
	// OwnerRevoked reports whether the credential that owns an owner
	// digest's sandboxes was revoked; nil: never.
	OwnerRevoked func(owner string) (bool, error)

	// RateLimit is the tenant's call rate limit, shared with MCP's tool
	// calls (CallsPerMinute, for the refusal's text).
	RateLimit      func(tenant string, now time.Time) (ok bool, wait time.Duration)
	CallsPerMinute int
	// RecordEnd writes a call's last record and counts the call.
	RecordEnd func(ctx context.Context, end *audit.Event, began time.Time) error
	// OpenRegular opens a regular file of b's workspace on this host for
	// a download, or fails (errors.ErrUnsupported) where the runner must
	// read it.
	OpenRegular func(b *fleet.Box, path string) (*os.File, fs.FileInfo, error)
}

// Server is the E2B adapter of one gateway.
type Server struct {
	cfg    Config
	boxes  *fleet.Fleet
	audit  audit.Sink
	log    *slog.Logger
	denied *deniedLog // rate of refused data-plane requests' records
	e2b    *e2b.API
	// accessKey signs sandbox access tokens (Config.AccessKey).
	accessKey []byte
}

// New builds the adapter and the E2B API in front of it.
func New(cfg Config) *Server {
	g := &Server{cfg: cfg, boxes: cfg.Fleet, audit: cfg.Audit, log: cfg.Log, denied: newDeniedLog(), accessKey: cfg.AccessKey}
	if len(g.accessKey) == 0 {
		g.accessKey = make([]byte, 32)
		_, _ = rand.Read(g.accessKey)
	}
	g.e2b = e2b.New(e2b.Options{Backend: e2bBackend{g}, Authenticate: g.authenticateAPI, Log: g.log})
	return g
}
