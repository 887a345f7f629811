package fleet

import "github.com/prometheus/client_golang/prometheus"

// liveSandboxes reports the live sandboxes per tenant at scrape time,
// counted from the gateway's own records rather than kept as a gauge that
// every path would have to move in step.
type liveSandboxes struct{ m *Fleet }

var liveDesc = prometheus.NewDesc("sandgate_sandboxes_live", "Live sandboxes by tenant.", []string{"tenant"}, nil)

func (l liveSandboxes) Describe(ch chan<- *prometheus.Desc) { ch <- liveDesc }

func (l liveSandboxes) Collect(ch chan<- prometheus.Metric) {
	for tenant, n := range l.m.PerTenant() {
		ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(n), tenant)
	}
}
