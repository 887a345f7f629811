// Package metrics holds the gateway's Prometheus instruments: what an
// operator watches (calls, latency, sandboxes, runners, the audit log,
// HTTP and egress). Labels are bounded sets: tool names, outcomes, status
// codes, tenants. No label ever carries a session id, a sandbox id, a
// token or an argument.
//
// Each gateway has a registry of its own rather than the process-global
// default one, so that tests can run several gateways in one process and
// read each one's numbers.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "sandgate"

// Sandbox start sources, the values of sandgate_sandbox_starts_total's
// source label.
const (
	StartCold    = "cold"    // created for the caller: no pool, or the pool was empty
	StartPool    = "pool"    // claimed from the warm pool
	StartReplace = "replace" // a new container for a sandbox whose runner died
)

// Where a file read was served (FileReads).
const (
	ReadHost   = "host"
	ReadRunner = "runner"
)

// Metrics is one gateway's set of instruments.
type Metrics struct {
	reg *prometheus.Registry

	// ToolCalls counts finished tool calls by tool and outcome (ok,
	// error, denied).
	ToolCalls *prometheus.CounterVec
	// ToolSeconds is the latency of a tool call from the handler's start
	// to its result, audit records included.
	ToolSeconds *prometheus.HistogramVec
	// SandboxStarts counts containers started, by source (StartCold,
	// StartPool, StartReplace) and outcome.
	SandboxStarts *prometheus.CounterVec
	// SandboxStartSeconds is how long a caller waited for its sandbox.
	SandboxStartSeconds *prometheus.HistogramVec
	// SandboxPauses and SandboxResumes count pauses and resumes by
	// reason (idle, max lifetime, sandbox_pause, call, ...) and outcome.
	SandboxPauses  *prometheus.CounterVec
	SandboxResumes *prometheus.CounterVec
	// PoolClaims counts first calls that asked the warm pool for a
	// sandbox, by result (hit, miss).
	PoolClaims *prometheus.CounterVec
	// RunnerReconnects counts connections to a runner dialled again after
	// the previous one broke.
	RunnerReconnects prometheus.Counter
	// RunnerDeaths counts runners found dead or unresponsive (each leads
	// to a replaced container).
	RunnerDeaths prometheus.Counter
	// AuditAppendSeconds is an Append's latency as a caller sees it:
	// queueing behind other records, the write and the fsync.
	AuditAppendSeconds prometheus.Histogram
	// AuditSyncSeconds is one group commit's write and fsync, and
	// AuditSyncRecords how many records it carried.
	AuditSyncSeconds prometheus.Histogram
	AuditSyncRecords prometheus.Histogram
	// HTTPRequests counts HTTP requests by route group and status code.
	HTTPRequests *prometheus.CounterVec
	// EgressConnections counts egress connections by outcome (ok,
	// denied, error).
	EgressConnections *prometheus.CounterVec
	// FileReads counts file reads by where they were served: ReadHost
	// (the gateway read the workspace on its own disk) or ReadRunner.
	FileReads *prometheus.CounterVec
}

// latencyBuckets spans a fast file read (0.5 ms) to a long command (5 min).
var latencyBuckets = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 30, 60, 300}

// New returns a gateway's instruments on a registry of their own, with
// the Go runtime and process collectors beside them.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		ToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "tool_calls_total",
			Help: "Tool calls finished, by tool and outcome (ok, error, denied)."}, []string{"tool", "outcome"}),
		ToolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "tool_call_duration_seconds",
			Help: "Tool call latency in the gateway, audit records included.", Buckets: latencyBuckets}, []string{"tool"}),
		SandboxStarts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "sandbox_starts_total",
			Help: "Sandboxes given to callers, by source (cold, pool, replace) and outcome (ok, error)."}, []string{"source", "outcome"}),
		SandboxStartSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "sandbox_start_duration_seconds",
			Help: "How long a caller waited for a sandbox, by source.", Buckets: latencyBuckets}, []string{"source"}),
		SandboxPauses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "sandbox_pauses_total",
			Help: "Sandboxes paused, by reason (idle, max lifetime, the owner's timeout, sandbox_pause, e2b) and outcome (ok, error)."}, []string{"reason", "outcome"}),
		SandboxResumes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "sandbox_resumes_total",
			Help: "Paused sandboxes resumed, by reason (call, sandbox_resume, e2b) and outcome (ok, error)."}, []string{"reason", "outcome"}),
		PoolClaims: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "pool_claims_total",
			Help: "Warm pool claims by result (hit: a ready sandbox was taken; miss: the pool was empty)."}, []string{"result"}),
		RunnerReconnects: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "runner_reconnects_total",
			Help: "Runner connections dialled again after the previous one broke."}),
		RunnerDeaths: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "runner_deaths_total",
			Help: "Runners found dead or unresponsive; each one's container is replaced."}),
		AuditAppendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "audit_append_duration_seconds",
			Help: "Audit Append latency: queueing, write and fsync.", Buckets: latencyBuckets}),
		AuditSyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "audit_fsync_duration_seconds",
			Help: "One audit group commit: write and fsync.", Buckets: latencyBuckets}),
		AuditSyncRecords: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "audit_fsync_records",
			Help: "Records made durable by one audit fsync.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests by route group (mcp, oauth, metadata, healthz, other) and status code."}, []string{"handler", "code"}),
		EgressConnections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "egress_connections_total",
			Help: "Sandbox egress connections by outcome (ok, denied, error)."}, []string{"outcome"}),
		FileReads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "file_reads_total",
			Help: "File reads by where they were served (host: from the workspace on the gateway's disk; runner)."}, []string{"via"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.ToolCalls, m.ToolSeconds, m.SandboxStarts, m.SandboxStartSeconds, m.SandboxPauses, m.SandboxResumes, m.PoolClaims,
		m.RunnerReconnects, m.RunnerDeaths,
		m.AuditAppendSeconds, m.AuditSyncSeconds, m.AuditSyncRecords,
		m.HTTPRequests, m.EgressConnections, m.FileReads,
	)
	return m
}

// MustRegister adds collectors that compute their values at scrape time
// (for example live sandboxes, counted from the gateway's own state).
func (m *Metrics) MustRegister(cs ...prometheus.Collector) { m.reg.MustRegister(cs...) }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Instrument counts h's requests under the route group name.
func (m *Metrics) Instrument(name string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerCounter(m.HTTPRequests.MustCurryWith(prometheus.Labels{"handler": name}), h)
}

// ObserveSync records one audit group commit; it fits audit.SyncObserver.
func (m *Metrics) ObserveSync(d time.Duration, records int) {
	m.AuditSyncSeconds.Observe(d.Seconds())
	m.AuditSyncRecords.Observe(float64(records))
}

// Since observes the time since start on o, in seconds.
func Since(o prometheus.Observer, start time.Time) { o.Observe(time.Since(start).Seconds()) }
