package resources

import (
	"log/slog"

	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/gateway/tools"
)

// Config is what the resources need of the gateway.
type Config struct {
	Fleet *fleet.Fleet
	Audit tools.AuditLog
	Log   *slog.Logger
	// Tools is where a read goes through the same rate limit, sandbox
	// attachment and audit records as a read-only tool call
	// (tools.Toolbox.RunReadOnly).
	Tools *tools.Toolbox
}

// Publisher serves resources and prompts to clients: the MCP edge.
type Publisher interface {
	AddResource(r mcpapi.Resource, read mcpapi.ResourceHandler)
	AddResourceTemplate(t mcpapi.ResourceTemplate, read mcpapi.ResourceHandler)
	AddPrompt(p mcpapi.Prompt, get mcpapi.PromptHandler)
}

// Service is the gateway's MCP resources (sandbox files and the
// caller's audit records, listed, read, completed and watched) and the
// prompts built on them. The MCP edge calls it (mcpedge.Resources) for
// what it serves besides a read.
type Service struct {
	log     *slog.Logger
	audit   tools.AuditLog
	boxes   *fleet.Fleet
	tools   *tools.Toolbox
	watches *watchHub // fans sandbox file changes out to subscribers
}

// New makes the resources of cfg.
func New(cfg Config) *Service {
	return &Service{log: cfg.Log, audit: cfg.Audit, boxes: cfg.Fleet, tools: cfg.Tools, watches: newWatchHub(cfg.Log)}
}

// Register serves the resource template, the audit resource and the
// prompts through pub.
func (g *Service) Register(pub Publisher) {
	g.registerResources(pub)
	g.registerPrompts(pub)
}

// Watchers reports how many subscribers (legacy sessions and
// subscriptions/listen streams) watch sandbox id's files.
func (g *Service) Watchers(id string) int { return g.watches.subscribers(id) }
