package gateway

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/gateway/egress/guard"
	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// egressAuditTimeout bounds writing one connection's audit record.
const egressAuditTimeout = 30 * time.Second

// newEgress builds the service that serves every sandbox's egress.
func (g *Server) newEgress() *egress.Service {
	own, err := guard.HostPrefixes()
	if err != nil {
		// The fixed table still refuses loopback, private and link-local
		// ranges, which hold most of a host's addresses.
		g.log.Warn("list this host's addresses for the egress guard", "error", err)
	}
	tenants := g.cfg.Egress.Policy
	return egress.NewService(egress.Options{
		Guard:    guard.New(own),
		Resolver: g.cfg.Egress.Resolver,
		Ceiling:  func(tenant string) policy.Rules { return tenants.For(tenant).Ceiling },
		Record:   g.recordEgress,
		Log:      g.log,
		Testing:  g.cfg.Egress.Testing,
	})
}

// recordEgress writes one connection's audit record.
func (g *Server) recordEgress(r egress.Record) {
	ev := &audit.Event{Kind: audit.KindEgress, Principal: r.Principal, SandboxID: r.SandboxID,
		Outcome: audit.OutcomeOK, DenyReason: r.Refused, DurationMs: r.Duration.Milliseconds(),
		Connection: &audit.Connection{Proxy: r.Kind, Asked: r.Asked, Host: r.Host, Port: r.Port, SNI: r.SNI, IP: r.IP,
			Rule: r.Rule, Status: r.Status, Closed: r.Closed, BytesUp: r.BytesUp, BytesDown: r.BytesDown, Unrecorded: r.Unrecorded}}
	switch {
	case r.Refused != "":
		ev.Outcome = audit.OutcomeDenied
	case r.Closed != "":
		ev.Outcome = audit.OutcomeError
	}
	g.metrics.EgressConnections.WithLabelValues(ev.Outcome).Inc()
	if r.Unrecorded > 0 {
		g.metrics.EgressConnections.WithLabelValues(audit.OutcomeDenied).Add(float64(r.Unrecorded))
	}
	ctx, cancel := context.WithTimeout(context.Background(), egressAuditTimeout)
	defer cancel()
	if err := g.audit.Append(ctx, ev); err != nil {
		g.log.Error("audit append failed", "kind", ev.Kind, "sandbox_id", ev.SandboxID, "error", err)
	}
}
