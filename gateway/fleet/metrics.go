package fleet

import "github.com/prometheus/client_golang/prometheus"

// liveSandboxes reports the running and the paused sandboxes per tenant,
// and the bytes the paused ones take on disk, at scrape time: counted
// from the gateway's own records rather than kept as gauges that every
// path would have to move in step.
type liveSandboxes struct{ m *Fleet }

var (
	liveDesc        = prometheus.NewDesc("sandgate_sandboxes_live", "Running (not paused) sandboxes by tenant.", []string{"tenant"}, nil)
	pausedDesc      = prometheus.NewDesc("sandgate_sandboxes_paused", "Paused sandboxes by tenant.", []string{"tenant"}, nil)
	pausedBytesDesc = prometheus.NewDesc("sandgate_sandboxes_paused_bytes", "Bytes on disk of the paused sandboxes' workspaces, by tenant.", []string{"tenant"}, nil)
)

func (l liveSandboxes) Describe(ch chan<- *prometheus.Desc) {
	ch <- liveDesc
	ch <- pausedDesc
	ch <- pausedBytesDesc
}

func (l liveSandboxes) Collect(ch chan<- prometheus.Metric) {
	for tenant, n := range l.m.PerTenant() {
		ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(n), tenant)
	}
	for tenant, u := range l.m.pausedPerTenant() {
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, float64(u.n), tenant)
		ch <- prometheus.MustNewConstMetric(pausedBytesDesc, prometheus.GaugeValue, float64(u.bytes), tenant)
	}
}
