package mcpedge

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/gateway/metrics"
)

// Config is what the MCP edge needs of the gateway.
type Config struct {
	// Auth verifies bearer tokens; nil: authentication is off and every
	// caller is Local.
	Auth  *resource.Server
	Local identity.Identity
	// AllowedOrigins are browser origins allowed besides the gateway's
	// own; BodyReadTimeout bounds reading one request body.
	AllowedOrigins  []string
	BodyReadTimeout time.Duration
	// Replicated says other replicas serve the same sandboxes: a request
	// for a legacy session this replica does not know may be another's.
	Replicated bool
	// IdleTTL is a legacy session's idle timeout; mcp-go's own sweep of
	// its transport state runs a minute after it.
	IdleTTL time.Duration

	Audit   audit.Sink
	Log     *slog.Logger
	Metrics *metrics.Metrics

	// NeededScopes returns the scopes a request needs (a tool call its
	// tool's, a resource read the read scope, ...).
	NeededScopes func(Message) []string
	// OnSessionEnd is called once per legacy session when it ends.
	OnSessionEnd func(id, reason string)
	// Name, Version and Instructions describe the MCP server to clients.
	Name, Version, Instructions string
	// Resources serves the caller's resource list, completions and
	// subscriptions; CompletePrompt completes prompt arguments. Either
	// may be nil.
	Resources      Resources
	CompletePrompt mcpapi.Completer
}

// Edge is the gateway's MCP edge: mcp-go's server and Streamable HTTP
// transport, and everything that adapts them (see doc.go).
type Edge struct {
	cfg       Config
	audit     audit.Sink
	log       *slog.Logger
	sessions  *Sessions
	listeners *listenHub  // legacy sessions' standalone GET streams
	redeliver *redelivery // tools/list_changed for sessions without one
	hooks     *server.Hooks
	mcp       *server.MCPServer
	http      *server.StreamableHTTPServer
}

// New builds the edge: the MCP server, its hooks and its transport.
func New(cfg Config) *Edge {
	e := &Edge{cfg: cfg, audit: cfg.Audit, log: cfg.Log, hooks: &server.Hooks{}}
	e.sessions = NewSessions(cfg.OnSessionEnd)
	e.listeners = newListenHub(e.queueNotification)
	cfg.Metrics.MustRegister(e.listeners.dropped)
	e.registerStandalone(e.hooks)
	e.registerResources(e.hooks)
	e.mcp = server.NewMCPServer(cfg.Name, cfg.Version, e.serverOptions()...)
	e.http = server.NewStreamableHTTPServer(e.mcp,
		server.WithEndpointPath("/mcp"),
		server.WithSessionIdManager(e.sessions),
		// mcp-go's own sweep runs a minute after ours so that ours ends the
		// session (with the right audit reason) and mcp-go then frees its
		// transport state.
		server.WithSessionIdleTTL(cfg.IdleTTL+time.Minute),
		server.WithStreamableHTTPLogger(cfg.Log),
	)
	return e
}

// serverOptions are the MCP server's capabilities and behaviour: tools
// whose list changes, resources with subscriptions and list changes,
// prompts, completions, logging, and recovery from a handler's panic.
func (e *Edge) serverOptions() []server.ServerOption {
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(false),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithHooks(e.hooks),
	}
	if e.cfg.Resources != nil {
		opts = append(opts, server.WithResourceCompletionProvider(resourceCompletions{e.cfg.Resources.Complete}))
	}
	if e.cfg.CompletePrompt != nil {
		opts = append(opts, server.WithPromptCompletionProvider(promptCompletions{e.cfg.CompletePrompt}))
	}
	if e.cfg.Instructions != "" {
		opts = append(opts, server.WithInstructions(e.cfg.Instructions))
	}
	return opts
}

// Handler serves /mcp: the middleware, then mcp-go's transport with the
// error codes handlers choose (rpccodes.go).
func (e *Edge) Handler() http.Handler { return e.Middleware(rpcCodes(e.http)) }

// MCP is mcp-go's server, for the edge's own tests.
func (e *Edge) MCP() *server.MCPServer { return e.mcp }

// Transport is the Streamable HTTP transport, to serve behind
// Middleware.
func (e *Edge) Transport() *server.StreamableHTTPServer { return e.http }

// Sessions are the legacy MCP sessions.
func (e *Edge) Sessions() *Sessions { return e.sessions }

// EndSessions ends the standalone streams and every legacy session, at
// shutdown.
func (e *Edge) EndSessions() {
	e.listeners.close()
	for _, id := range e.sessions.All() {
		e.sessions.End(id, "shutdown")
	}
}

// Shutdown shuts the transport down.
func (e *Edge) Shutdown(ctx context.Context) { _ = e.http.Shutdown(ctx) }
