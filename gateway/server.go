package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/e2bbackend"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpedge"
	"github.com/sandgate/sandgate/gateway/mcpws"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/gateway/preview"
	"github.com/sandgate/sandgate/gateway/resources"
	"github.com/sandgate/sandgate/gateway/tools"
	"github.com/sandgate/sandgate/sandbox"
)

// AuditStore is what the gateway needs from the audit log: appending
// records and reading a principal's own back.
type AuditStore interface {
	audit.Sink
	Query(ctx context.Context, q audit.Query) ([]audit.Event, error)
}

// Version is reported to MCP clients in serverInfo.
const Version = "0.1.0"

// Server is the gateway: the MCP edge, the tools, resources and prompts
// behind it, the E2B API, and the fleet of sandboxes they all use.
type Server struct {
	cfg      Config
	log      *slog.Logger
	audit    AuditStore
	boxes    *fleet.Fleet
	edge     *mcpedge.Edge
	sessions *mcpedge.Sessions // the edge's
	tools    *tools.Toolbox
	metrics  *metrics.Metrics
	ready    atomic.Bool
	stop     context.CancelFunc
	// e2b serves the E2B-compatible API; nil when it is disabled.
	e2b *e2bbackend.Server
	// res serves the resources and prompts.
	res *resources.Service
	// preview serves preview ports.
	preview *preview.Handler
}

// New builds a gateway on provider p writing audit records to store. It
// removes orphaned containers before returning, so a returned Server can
// serve at once.
func New(ctx context.Context, cfg Config, p sandbox.Provider, store AuditStore, log *slog.Logger) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkMemory(cfg.Limits, !fleet.WorkspaceDurable(p)); err != nil {
		return nil, err
	}
	if _, ok := p.(sandbox.PoolClaims); cfg.Replicated && cfg.fleet().Pooling() && !ok {
		return nil, fmt.Errorf("%w; %T does not", ErrPoolReplicated, p)
	}
	if _, ok := p.(sandbox.Recorder); cfg.Replicated && !ok {
		return nil, fmt.Errorf("replicated gateways need a provider whose sandbox records they share and can update (sandbox.Recorder); %T is none", p)
	}
	m := metrics.New()
	g := &Server{cfg: cfg, log: log, audit: timedAudit{store, m}, metrics: m}
	if s, ok := store.(interface {
		OnSync(func(time.Duration, int))
	}); ok {
		s.OnSync(m.ObserveSync)
	}
	var err error
	g.boxes = fleet.New(p, cfg.fleet(), g.audit, log, m, g.newEgress())
	tc := cfg.tools()
	tc.Fleet, tc.Audit, tc.Log, tc.Metrics = g.boxes, g.audit, log, m
	if g.tools, err = tools.New(tc); err != nil {
		return nil, err
	}
	if !cfg.E2B.Disabled {
		g.e2b = e2bbackend.New(e2bbackend.Config{Fleet: g.boxes, Audit: g.audit, Log: log, Metrics: m,
			Image: cfg.Image, Images: cfg.Images, Templates: cfg.E2B.Templates, Limits: cfg.Limits,
			Auth: cfg.Auth, Local: LocalPrincipal, APIKey: cfg.E2B.APIKey, AccessKey: cfg.E2B.AccessKey, OwnerRevoked: cfg.E2B.OwnerRevoked,
			RateLimit: g.tools.Allow, CallsPerMinute: cfg.ToolCallsPerMinute, RecordEnd: g.tools.AppendEnd, OpenRegular: g.tools.OpenRegular})
	}
	if err = g.boxes.Reconcile(ctx); err != nil {
		return nil, fmt.Errorf("reconcile sandboxes at start: %w", err)
	}

	g.res = resources.New(resources.Config{Fleet: g.boxes, Audit: g.audit, Log: log, Tools: g.tools})
	g.edge = mcpedge.New(mcpedge.Config{Auth: cfg.Auth, Local: LocalPrincipal, AllowedOrigins: cfg.AllowedOrigins,
		BodyReadTimeout: cfg.BodyReadTimeout, Replicated: cfg.Replicated, IdleTTL: g.sessionIdle(),
		Audit: g.audit, Log: log, Metrics: m, NeededScopes: g.neededScopes, OnSessionEnd: g.onSessionEnd,
		Resources: g.res, CompletePrompt: g.res.CompletePrompt,
		Name: "sandgate", Version: Version,
		Instructions: "Each MCP session gets its own sandbox: a Linux container with no network, a writable /workspace and resource limits. Sessionless clients get a default sandbox per client on first use, or call sandbox_create and pass sandbox_id."})
	g.preview = preview.New(preview.Config{Fleet: g.boxes, Audit: g.audit, Log: log, Local: LocalPrincipal})
	g.sessions = g.edge.Sessions()
	g.res.Register(g.edge)
	g.edge.AddTools(g.tools.Served()...)

	sweepCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = cancel
	go g.sweepLoop(sweepCtx)
	g.boxes.Start(sweepCtx)
	if err := g.tools.StartCustom(sweepCtx, g.edge); err != nil {
		cancel()
		return nil, err
	}
	g.ready.Store(true)
	return g, nil
}

// Handler returns the gateway's HTTP handler: /mcp, /healthz and, with
// authentication, the OAuth routes. Every route's requests are counted by
// status in the metrics (see MetricsHandler).
func (g *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	count := g.metrics.Instrument
	mcp := count("mcp", g.edge.Handler())
	mux.Handle("/mcp", mcp)
	ws := mcpws.Config{MCP: mcp, Path: "/mcp", OriginAllowed: g.edge.OriginAllowed, MaxMessageBytes: mcpedge.MaxBodyBytes, Log: g.log}
	if g.cfg.Auth != nil {
		ws.Authenticate = g.cfg.Auth.Authenticate
	}
	mux.Handle("/mcp/ws", count("mcp_ws", mcpws.Handler(ws)))
	var pv http.Handler = g.preview
	if g.cfg.Auth != nil {
		pv = g.cfg.Auth.Authenticate(pv)
	}
	mux.Handle(preview.Route, count("preview", pv))
	if g.cfg.Auth != nil {
		// RFC 9728: the metadata of the /mcp resource, at the root and at
		// the path-inserted location clients derive from the resource.
		mh := count("metadata", g.cfg.Auth.MetadataHandler())
		mux.Handle("GET /.well-known/oauth-protected-resource", mh)
		mux.Handle("GET /.well-known/oauth-protected-resource/", mh)
	}
	if len(g.cfg.AuthRoutes) > 0 {
		as := count("oauth", g.cfg.AuthServer)
		for _, route := range g.cfg.AuthRoutes {
			mux.Handle(route, as)
		}
	}
	mux.Handle("GET /healthz", count("healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.ready.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})))
	other := count("other", http.NotFoundHandler())
	if g.e2b != nil {
		other = g.e2b.Mount(mux, other)
	}
	mux.Handle("/", other)
	return mux
}

// MetricsHandler serves the gateway's metrics in the Prometheus format.
// It is meant for a listener of its own (cmd/gateway's --metrics-addr),
// not for the public one: it needs no token.
func (g *Server) MetricsHandler() http.Handler { return g.metrics.Handler() }

// onSessionEnd is called once per legacy session when it ends, for any reason.
func (g *Server) onSessionEnd(id, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.res.Unsubscribe(id, "")
	g.boxes.EndSession(ctx, id, reason)
	ev := &audit.Event{Kind: audit.KindSessionEnd, Session: id, Summary: map[string]string{"reason": reason}, Outcome: "ok"}
	if err := g.audit.Append(ctx, ev); err != nil {
		g.log.Error("audit append failed", "kind", ev.Kind, "session_id", id, "error", err)
	}
	g.log.Info("session ended", "session_id", id, "reason", reason)
}

// sessionIdle is how long a legacy MCP session lives unused. A gateway
// that pauses idle sandboxes keeps the session while its paused sandbox
// is kept, so that the client's next call, under the same session id,
// resumes it; one that destroys them ends the session with its sandbox.
func (g *Server) sessionIdle() time.Duration {
	if g.boxes.Pauses() {
		return g.cfg.Limits.IdleTTL + g.cfg.PausedRetention
	}
	return g.cfg.Limits.IdleTTL
}

// sessionMaxAge is how long a legacy MCP session may last (0: as long as
// it is used). Past its maximum lifetime a paused sandbox is resumed for
// a new run rather than removed, so only a destroying gateway ends
// sessions by age.
func (g *Server) sessionMaxAge() time.Duration {
	if g.boxes.Pauses() {
		return 0
	}
	return g.cfg.Limits.MaxLifetime
}

func (g *Server) sweepLoop(ctx context.Context) {
	// Expiry is enforced to within a quarter of the shorter TTL.
	interval := min(g.cfg.Limits.IdleTTL/4, g.cfg.Limits.MaxLifetime/4, 30*time.Second)
	t := time.NewTicker(max(interval, time.Second))
	defer t.Stop()
	rt := time.NewTicker(g.cfg.ReconcileInterval)
	defer rt.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-rt.C:
			g.boxes.ReconcileTracked(ctx, now)
		case now := <-t.C:
			g.sweep(ctx, now)
		}
	}
}

// sweep ends the legacy sessions and sandboxes that are due as of now,
// and forgets stale rate-limit state.
func (g *Server) sweep(ctx context.Context, now time.Time) {
	for id, reason := range g.sessions.Expired(now, g.sessionIdle(), g.sessionMaxAge()) {
		g.sessions.End(id, reason)
	}
	g.boxes.Sweep(ctx, now, g.sessions.End)
	g.tools.Prune(now)
}

// Close ends every session and removes its sandbox, and removes the
// warm pool's; sessionless sandboxes stay for the next gateway (or the
// other replicas) to adopt (see closeAll). It does not close the audit
// store, which belongs to the caller.
func (g *Server) Close(ctx context.Context) {
	g.ready.Store(false)
	g.stop()
	g.edge.EndSessions()
	g.boxes.CloseAll(ctx)
	g.edge.Shutdown(ctx)
	g.preview.Wait()
}

// checkMemory refuses limits under which a sandbox's own files could take
// the memory its runner needs: /tmp and /dev/shm are tmpfs, and so is
// /workspace when the provider has no disk workspaces.
func checkMemory(l sandbox.Limits, tmpfsWorkspace bool) error {
	if err := l.CheckMemory(tmpfsWorkspace); err != nil {
		hint := "raise --memory or lower --tmp-size"
		if tmpfsWorkspace {
			hint += " (workspaces are in RAM here because the host cannot loop-mount them)"
		}
		return fmt.Errorf("sandbox limits: %w: %s", err, hint)
	}
	return nil
}
