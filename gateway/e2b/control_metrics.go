package e2b

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Metrics is one sample of a sandbox's resource use.
type Metrics struct {
	At         time.Time
	CPUCount   int     // CPUs the sandbox may use, rounded up
	CPUUsedPct float64 // of all of CPUCount, over a short interval ending at At
	MemUsed    int64   // bytes its memory cgroup charges beyond MemCache; 0 when unreadable
	MemTotal   int64   // bytes, its memory limit
	MemCache   int64   // bytes of page cache (tmpfs files included) charged to it; 0 when unreadable
	DiskUsed   int64   // bytes used in /workspace; 0 when unreadable
	DiskTotal  int64   // bytes, the size of /workspace
}

// metric is E2B's SandboxMetric as the SDKs read it. Every field is
// required by the Python SDK's model (e2b/api/client/models/
// sandbox_metric.py pops each key, memCache since 2.25), and memUsed and
// memCache mean what envd's do: memory in use without the page cache,
// and the page cache.
type metric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// metrics serves GET /sandboxes/{id}/metrics with one current sample,
// whatever the start and end of the window asked for: the gateway keeps
// no history of a sandbox's resource use. They must still be Unix
// seconds, as the SDKs send them.
func (a *API) metrics(w http.ResponseWriter, r *http.Request) {
	for _, q := range []string{"start", "end"} {
		if v := r.URL.Query().Get(q); v != "" {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				replyErrorStatus(w, http.StatusBadRequest, "the "+q+" query parameter must be a time in Unix seconds, e.g. "+strconv.FormatInt(time.Now().Unix(), 10))
				return
			}
		}
	}
	m, err := a.backend.Metrics(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrPaused) {
		replyJSON(w, http.StatusOK, []metric{}) // nothing runs: no sample
		return
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	at := m.At.UTC()
	replyJSON(w, http.StatusOK, []metric{{Timestamp: at, TimestampUnix: at.Unix(), CPUCount: m.CPUCount, CPUUsedPct: m.CPUUsedPct,
		MemUsed: m.MemUsed, MemTotal: m.MemTotal, MemCache: m.MemCache, DiskUsed: m.DiskUsed, DiskTotal: m.DiskTotal}})
}
