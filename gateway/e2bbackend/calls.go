package e2bbackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/gateway/fleet"
)

// apiCall runs one call of the E2B API as p, on b (nil for control-plane
// calls that reach no runner), with what a tool call gets: the tenant's
// call rate limit, a tool.start record (durable before anything that
// changes something runs) and a tool.end record before the result
// leaves. The audit's tool name is "e2b." + op.Name, so the log reads the
// same whichever API did the work.
func (g *Server) apiCall(ctx context.Context, p identity.Identity, b *fleet.Box, op e2b.Op, fn func(ctx context.Context) error) error {
	began := time.Now()
	tool := "e2b." + op.Name
	start := &audit.Event{Kind: audit.KindToolStart, Principal: p, Tool: tool, RequestID: uuid.NewString(), Summary: summaryText(op.Summary)}
	end := &audit.Event{Kind: audit.KindToolEnd, Principal: start.Principal, Tool: tool, RequestID: start.RequestID, Summary: start.Summary}
	if b != nil {
		start.SandboxID, start.ContainerID = b.ID(), b.Info().ContainerID
		end.SandboxID, end.ContainerID = start.SandboxID, start.ContainerID
	}
	if ok, wait := g.cfg.RateLimit(p.Tenant, began); !ok {
		end.Kind, end.Outcome, end.DenyReason = audit.KindToolDenied, audit.OutcomeDenied, "rate limit"
		g.cfg.RecordEnd(ctx, end, began)
		return fmt.Errorf("%w: your tenant may make %d calls a minute; retry in %.1f s", e2b.ErrQuota, g.cfg.CallsPerMinute, wait.Seconds())
	}
	if err := g.audit.Append(ctx, start); err != nil {
		g.log.Error("audit append failed; refusing API call", "tool", tool, "error", err)
		return fmt.Errorf("%v: refusing to run %s unaudited; an operator must fix the audit log (%v)", audit.ErrUnavailable, tool, err)
	}
	err := fn(ctx)
	end.Outcome = audit.OutcomeOK
	switch {
	case errors.Is(err, context.Canceled):
		end.Outcome, end.Error = audit.OutcomeCanceled, err.Error()
	case err != nil:
		end.Outcome, end.Error = audit.OutcomeError, audit.Clip(err.Error(), 500)
	}
	if aerr := g.cfg.RecordEnd(ctx, end, began); aerr != nil {
		return fmt.Errorf("%v: %s ran but its end could not be recorded, so its result is withheld (%v)", audit.ErrUnavailable, tool, aerr)
	}
	return err
}

// summaryText renders an API call's summary as an audit record holds it.
func summaryText(m map[string]any) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = audit.Clip(fmt.Sprint(v), 200)
	}
	return out
}
