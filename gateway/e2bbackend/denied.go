package e2bbackend

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
)

// Refused E2B data-plane requests are audited as tool.denied, as MCP's
// refusals are: a missing, forged or foreign access token, a token whose
// API key was revoked, a sandbox that is gone, a call outside the
// token's scopes. A refusal with no valid token needs no credential at
// all, so its records are rate-limited as a whole (deniedRate, in bursts
// of deniedBurst): past that, refusals are counted, and the next record
// says how many went unrecorded, so that nobody can fill the audit log's
// disk by knocking.
const (
	deniedRate  = 20 // records a second
	deniedBurst = 200
)

// deniedLog rate-limits the audit records of refused data-plane requests.
type deniedLog struct {
	lim *rate.Limiter

	mu         sync.Mutex
	unrecorded int64 // refusals since the last record that has none of its own
}

func newDeniedLog() *deniedLog {
	return &deniedLog{lim: rate.NewLimiter(deniedRate, deniedBurst)}
}

// take reports whether a refusal at now gets a record, and if so how
// many before it got none.
func (d *deniedLog) take(now time.Time) (record bool, skipped int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.lim.AllowN(now, 1) {
		d.unrecorded++
		return false, 0
	}
	skipped, d.unrecorded = d.unrecorded, 0
	return true, skipped
}

// denyData audits a refused data-plane request for operation op of
// sandbox id (as the client sent it) by p (empty when no valid token
// named anyone).
func (g *Server) denyData(ctx context.Context, p identity.Identity, id, op, reason string) {
	ok, skipped := g.denied.take(time.Now())
	if !ok {
		return
	}
	ev := &audit.Event{Kind: audit.KindToolDenied, Principal: p, SandboxID: audit.Clip(id, 128), Tool: "e2b." + op,
		Outcome: audit.OutcomeDenied, DenyReason: reason}
	if skipped > 0 {
		ev.Summary = map[string]string{"unrecorded_before": strconv.FormatInt(skipped, 10)}
	}
	if err := g.audit.Append(context.WithoutCancel(ctx), ev); err != nil {
		g.log.Error("audit append failed", "kind", ev.Kind, "tool", ev.Tool, "error", err)
	}
	g.cfg.Metrics.ToolCalls.WithLabelValues(ev.Tool, audit.OutcomeDenied).Inc()
}
