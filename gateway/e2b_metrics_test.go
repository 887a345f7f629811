package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// e2bMetric is E2B's SandboxMetric as the SDKs read it.
type e2bMetric struct {
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

// TestLocalE2BMetrics: GET /sandboxes/{id}/metrics answers one current
// sample whatever the window, from the runner's info. The local runner
// may read no cgroup, so memory and CPU use may be 0; the totals fall
// back to the sandbox's limits, and the workspace's disk is statfs's.
// Another tenant gets 404.
func TestLocalE2BMetrics(t *testing.T) {
	t.Parallel()
	og, keys := e2bKeyGateway(t)
	keyA, _, err := keys.Add("ci", "tenant-a", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	keyB, _, err := keys.Add("other", "tenant-b", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	a, b := map[string]string{"X-API-KEY": keyA}, map[string]string{"X-API-KEY": keyB}
	var made e2bCreated
	if resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes", a, map[string]any{"templateID": "base"}, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	base := og.Base + "/sandboxes/" + made.SandboxID + "/metrics"

	before := time.Now().Truncate(time.Second)
	window := fmt.Sprintf("?start=%d&end=%d", before.Add(-time.Hour).Unix(), before.Unix())
	for _, q := range []string{"", window} {
		var got []e2bMetric
		resp := e2bCall(t, "GET", base+q, a, nil, &got)
		if resp.StatusCode != http.StatusOK || len(got) != 1 {
			t.Fatalf("metrics%s: %d %+v, want one sample", q, resp.StatusCode, got)
		}
		m := got[0]
		t.Logf("metrics%s: %+v", q, m)
		if m.Timestamp.Before(before) || m.Timestamp.After(time.Now()) || m.TimestampUnix != m.Timestamp.Unix() {
			t.Errorf("timestamp %v (%d), want now", m.Timestamp, m.TimestampUnix)
		}
		if m.CPUCount < 1 || m.CPUUsedPct < 0 || m.CPUUsedPct > 100 || m.MemUsed < 0 || m.MemCache < 0 || m.MemTotal <= 0 || m.DiskTotal <= 0 || m.DiskUsed < 0 || m.DiskUsed > m.DiskTotal {
			t.Errorf("sample %+v: want at least one CPU, a percentage, and memory and disk totals above what is used", m)
		}
	}

	var e struct {
		Message string `json:"message"`
	}
	if resp := e2bCall(t, "GET", base+"?start=yesterday", a, nil, &e); resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Message, "Unix seconds") {
		t.Errorf("bad start: %d %q, want 400 about Unix seconds", resp.StatusCode, e.Message)
	}
	if resp := e2bCall(t, "GET", base, b, nil, &e); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant's metrics: %d %q, want 404", resp.StatusCode, e.Message)
	}
}
