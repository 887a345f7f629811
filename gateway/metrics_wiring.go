package gateway

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/metrics"
)

// timedAudit is the audit store with each Append's latency observed: what
// a tool call waits for its records, queueing behind others included.
type timedAudit struct {
	AuditStore
	m *metrics.Metrics
}

func (t timedAudit) Append(ctx context.Context, e *audit.Event) error {
	began := time.Now()
	err := t.AuditStore.Append(ctx, e)
	metrics.Since(t.m.AuditAppendSeconds, began)
	return err
}
