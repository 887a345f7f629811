package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/runner/protocol"
)

// RunReadOnly runs fn on b's runner as p with what a read-only tool
// call gets: the tenant's call rate limit, the sandbox kept from idling
// out, a dead runner replaced, and tool.start/tool.end records under the
// name tool (e.g. "resources/read"). As for a read-only tool, fn runs
// while the start record is written, and its result leaves only once
// both records are durable.
func (g *Toolbox) RunReadOnly(ctx context.Context, p identity.Identity, session string, b *fleet.Box, tool string, summary map[string]string, fn func(ctx context.Context, rc *protocol.Client) error) error {
	began := time.Now()
	start := &audit.Event{Kind: audit.KindToolStart, Principal: p, Session: session, Tool: tool, RequestID: uuid.NewString(),
		Summary: summary, SandboxID: b.ID(), ContainerID: b.Info().ContainerID}
	end := *start
	end.Kind = audit.KindToolEnd
	if ok, wait := g.limits.allow(p.Tenant, began); !ok {
		end.Kind, end.Outcome, end.DenyReason = audit.KindToolDenied, audit.OutcomeDenied, "rate limit"
		_ = g.AppendEnd(ctx, &end, began)
		return fmt.Errorf("rate limit: your tenant may make %d calls a minute; retry in %.1f s", g.cfg.ToolCallsPerMinute, wait.Seconds())
	}
	started := make(chan error, 1)
	go func() { started <- g.audit.Append(context.WithoutCancel(ctx), start) }()
	c := &call{g: g, p: p, session: session, box: b}
	err := c.acquire(ctx)
	if err == nil {
		err = fn(ctx, c.runner)
		if err != nil && protocol.CodeOf(err) == protocol.CodeUnavailable {
			if err = c.reattach(ctx); err == nil {
				err = fn(ctx, c.runner) // read-only: safe to run again
			}
		}
		c.box.Release()
	}
	if serr := <-started; serr != nil {
		g.log.Error("audit append failed; withholding resource", "tool", tool, "error", serr)
		return fmt.Errorf("%v: refusing to return %s unaudited; an operator must fix the audit log (%v)", audit.ErrUnavailable, tool, serr)
	}
	end.Outcome = audit.OutcomeOK
	switch {
	case errors.Is(err, context.Canceled):
		end.Outcome, end.Error = audit.OutcomeCanceled, err.Error()
	case err != nil:
		end.Outcome, end.Error = audit.OutcomeError, audit.Clip(err.Error(), 500)
	}
	if aerr := g.AppendEnd(ctx, &end, began); aerr != nil {
		return fmt.Errorf("%v: %s ran but its end could not be recorded, so its result is withheld (%v)", audit.ErrUnavailable, tool, aerr)
	}
	return err
}

// AppendEnd writes a call's last record (a resource read's, an E2B
// API call's) and counts the call.
func (g *Toolbox) AppendEnd(ctx context.Context, end *audit.Event, began time.Time) error {
	end.DurationMs = time.Since(began).Milliseconds()
	g.metrics.ToolCalls.WithLabelValues(end.Tool, cmp.Or(end.Outcome, audit.OutcomeDenied)).Inc()
	metrics.Since(g.metrics.ToolSeconds.WithLabelValues(end.Tool), began)
	err := g.audit.Append(context.WithoutCancel(ctx), end)
	if err != nil {
		g.log.Error("audit append failed", "tool", end.Tool, "error", err)
	}
	return err
}
