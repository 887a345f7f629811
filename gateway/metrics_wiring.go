package gateway

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// liveSandboxes reports the live sandboxes per tenant at scrape time,
// counted from the gateway's own records rather than kept as a gauge that
// every path would have to move in step.
type liveSandboxes struct{ m *sandboxes }

var liveDesc = prometheus.NewDesc("sandgate_sandboxes_live", "Live sandboxes by tenant.", []string{"tenant"}, nil)

func (l liveSandboxes) Describe(ch chan<- *prometheus.Desc) { ch <- liveDesc }

func (l liveSandboxes) Collect(ch chan<- prometheus.Metric) {
	for tenant, n := range l.m.perTenant() {
		ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(n), tenant)
	}
}
