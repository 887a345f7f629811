package tools

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/sandbox"
)

// Config is what the tools need of the gateway.
type Config struct {
	Fleet   *fleet.Fleet
	Audit   AuditLog
	Log     *slog.Logger
	Metrics *metrics.Metrics

	// Image is the default image of sandbox_create; Images those it may
	// name.
	Image  string
	Images []string
	Limits sandbox.Limits
	// ToolCallsPerMinute is each tenant's call rate limit.
	ToolCallsPerMinute int
	// Categories, EnabledTools and DisabledTools choose the tools served.
	Categories    []string
	EnabledTools  []string
	DisabledTools []string
	// EgressPolicy and EgressLimits are the sandboxes' egress, which
	// sandbox_network reports and the open-world hints follow.
	EgressPolicy egress.Tenants
	EgressLimits egress.Limits
	// ToolsDir is the operator's custom tools directory, or "".
	ToolsDir string
}

// AuditLog is what the tools need of the audit log: appending records and
// reading a principal's own back (audit_log).
type AuditLog interface {
	audit.Sink
	Query(ctx context.Context, q audit.Query) ([]audit.Event, error)
}

// Publisher serves tools to clients and tells them when the list changes:
// the MCP edge.
type Publisher interface {
	AddTools(tools ...mcpapi.ServerTool)
	RemoveTools(names ...string)
	// CheckInputSchema says why a tool with this input schema cannot be
	// served, or returns nil.
	CheckInputSchema(schema json.RawMessage) error
}

// Toolbox is the gateway's tools: the built-in ones enabled, the
// operator's custom ones, and the handler every call goes through.
type Toolbox struct {
	cfg     Config
	log     *slog.Logger
	audit   AuditLog
	boxes   *fleet.Fleet
	metrics *metrics.Metrics
	limits  *callLimits
	args    *argValidator
	defs    map[string]toolDef // enabled built-in tools by name
	enabled []toolDef          // the same, in tools/list order
	custom  *customTools       // the operator's tools; nil without ToolsDir
	publish Publisher          // set by StartCustom
}

// New builds the enabled tools and their argument validator.
func New(cfg Config) (*Toolbox, error) {
	t := &Toolbox{cfg: cfg, log: cfg.Log, audit: cfg.Audit, boxes: cfg.Fleet, metrics: cfg.Metrics,
		limits: newCallLimits(cfg.ToolCallsPerMinute), defs: map[string]toolDef{}}
	t.enabled = enabledTools(cfg)
	var err error
	if t.args, err = newArgValidator(t.enabled); err != nil {
		return nil, err
	}
	for _, d := range t.enabled {
		t.defs[d.tool.Name] = d
	}
	return t, nil
}

// Served returns the enabled built-in tools, each with its handler, in
// tools/list order.
func (g *Toolbox) Served() []mcpapi.ServerTool {
	out := make([]mcpapi.ServerTool, 0, len(g.enabled))
	for _, d := range g.enabled {
		out = append(out, mcpapi.ServerTool{Tool: d.tool, Handler: g.handler(d)})
	}
	return out
}

// Scopes returns the scopes a call of the tool name needs: a built-in
// or custom tool's, and none for an unknown tool, whose call the MCP
// edge answers with the precise error.
func (g *Toolbox) Scopes(name string) []string {
	d, _ := g.lookupTool(name)
	return d.scopes
}

// Allow takes one call from tenant's rate limit, or says how long to
// wait for the next; resources and the E2B API share the tools' limit.
func (g *Toolbox) Allow(tenant string, now time.Time) (bool, time.Duration) {
	return g.limits.allow(tenant, now)
}

// Prune forgets tenants whose rate limit is full again as of now.
func (g *Toolbox) Prune(now time.Time) { g.limits.prune(now) }
