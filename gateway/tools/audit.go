package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/gateway/audit"
)

type auditLogArgs struct {
	Limit int `json:"limit,omitempty" jsonschema:"How many of your most recent records to return (default 50, max 1000)."`
}

func auditTools() []toolDef {
	return []toolDef{
		{category: catAudit, summary: summarize(), run: runAuditLog,
			tool: mcpapi.NewTool("audit_log", argsSchema[auditLogArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Return your own most recent audit records: sessions, sandboxes and tool calls with outcome, exit code, duration and resource use. Records of other principals are never shown."))},
	}
}

func runAuditLog(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[auditLogArgs](c)
	if err != nil {
		return nil, err
	}
	if a.Limit < 0 || a.Limit > 1000 {
		return nil, fmt.Errorf("limit %d is out of range; use 1 to 1000", a.Limit)
	}
	events, err := c.g.audit.Query(ctx, audit.Query{Issuer: c.p.Issuer, Subject: c.p.Subject, Limit: a.Limit})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%d %s %s %s %s %s\n", e.Seq, e.Time.Format("2006-01-02T15:04:05Z07:00"), e.Kind, e.Tool, e.SandboxID, e.Outcome)
	}
	if b.Len() == 0 {
		b.WriteString("no records")
	}
	return structured(map[string]any{"records": events}, b.String(), false), nil
}
