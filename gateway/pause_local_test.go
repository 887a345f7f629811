package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// TestLocalPausedQuota: paused sandboxes count against their tenant's
// paused quota, not its live one. A pause past the paused quota is
// refused saying so; an idle sandbox it has no room for is kept running
// (its files are not destroyed); a paused sandbox frees its live slot,
// and resuming one needs a live slot again. /metrics reports running
// and paused sandboxes apart, the paused ones' bytes on disk, and the
// pauses by reason.
func TestLocalPausedQuota(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.MaxPausedPerTenant, c.MaxSandboxesPerTenant = 1, 2 })
	c := modernClient(t, tg.URL)
	create := func() string {
		t.Helper()
		id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
		mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": id, "path": "f.txt", "content": id}))
		return id
	}
	state := func(id string) string {
		t.Helper()
		infos, err := tg.Local.List(t.Context(), sandbox.Filter{ID: id})
		if err != nil || len(infos) != 1 {
			t.Fatalf("List(%s) = %v, %v", id, infos, err)
		}
		return infos[0].State
	}
	a, b := create(), create()
	mustOK(t, "sandbox_pause", call(t, c, "sandbox_pause", map[string]any{"sandbox_id": a}))
	res := call(t, c, "sandbox_pause", map[string]any{"sandbox_id": b})
	if !res.IsError || !strings.Contains(text(res), "paused sandbox quota") || !strings.Contains(text(res), "limits 1") {
		t.Fatalf("a second pause over a paused quota of 1: %q; want the quota error", text(res))
	}
	if state(b) != "running" {
		t.Fatalf("sandbox %s is %s after its pause was refused", b, state(b))
	}

	tg.gw.Sweep(time.Now().Add(sandbox.DefaultLimits.IdleTTL + time.Minute))
	if state(b) != "running" || state(a) != sandbox.StatePaused {
		t.Fatalf("after the idle TTL: %s is %s (want running: no room to pause it, and not destroyed), %s is %s", b, state(b), a, state(a))
	}

	third := create() // a paused sandbox holds no live slot: b and third are the two
	res = call(t, c, "sandbox_resume", map[string]any{"sandbox_id": a})
	if !res.IsError || !strings.Contains(text(res), "quota") || state(a) != sandbox.StatePaused {
		t.Fatalf("resume with both live slots taken: %q, %s is %s; want the quota error and it still paused", text(res), a, state(a))
	}

	m := scrape(t, tg)
	for name, want := range map[string]float64{
		`sandgate_sandboxes_live{tenant="local"}`:                              2,
		`sandgate_sandboxes_paused{tenant="local"}`:                            1,
		`sandgate_sandbox_pauses_total{outcome="ok",reason="sandbox_pause"}`:   1,
		`sandgate_sandbox_resumes_total{outcome="ok",reason="sandbox_resume"}`: 0,
	} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
	if m[`sandgate_sandboxes_paused_bytes{tenant="local"}`] <= 0 {
		t.Errorf("sandgate_sandboxes_paused_bytes = %v; want the paused workspace's bytes", m[`sandgate_sandboxes_paused_bytes{tenant="local"}`])
	}

	mustOK(t, "sandbox_destroy", call(t, c, "sandbox_destroy", map[string]any{"sandbox_id": third}))
	res = mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"sandbox_id": a, "path": "f.txt"}))
	if text(res) != a || !strings.Contains(allText(res), "was paused") {
		t.Fatalf("a call to the paused sandbox once a live slot is free: %q; want its file and the resume note", allText(res))
	}
}

// TestLocalPausedRetention: a paused sandbox is kept for the paused
// retention (7 days, the shipped default), which sandbox_info reports,
// and destroyed after it, with an audit record saying why.
func TestLocalPausedRetention(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
	mustOK(t, "sandbox_pause", call(t, c, "sandbox_pause", map[string]any{"sandbox_id": id}))
	info := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", map[string]any{"sandbox_id": id})))
	pausedAt, _ := time.Parse(time.RFC3339Nano, info["paused_at"].(string))
	removedAt, _ := time.Parse(time.RFC3339Nano, info["removed_at"].(string))
	if info["state"] != "paused" || info["on_idle"] != "pause" || removedAt.Sub(pausedAt) != gateway.DefaultPausedRetention {
		t.Fatalf("sandbox_info of a paused sandbox: %v; want state paused, on_idle pause, removed_at 7 days after paused_at", info)
	}

	tg.gw.Sweep(pausedAt.Add(gateway.DefaultPausedRetention - time.Minute))
	if infos, _ := tg.Local.List(t.Context(), sandbox.Filter{ID: id}); len(infos) != 1 {
		t.Fatalf("sandbox %s removed before its retention ended", id)
	}
	tg.gw.Sweep(pausedAt.Add(gateway.DefaultPausedRetention + time.Minute))
	if infos, _ := tg.Local.List(t.Context(), sandbox.Filter{ID: id}); len(infos) != 0 {
		t.Fatalf("sandbox %s kept after its retention: %+v", id, infos)
	}
	res := call(t, c, "read_file", map[string]any{"sandbox_id": id, "path": "f.txt"})
	if !res.IsError || !strings.Contains(text(res), "not found") {
		t.Fatalf("a call to the removed sandbox: %q", text(res))
	}
	found := false
	for _, e := range auditRecords(t, tg.AuditPath) {
		found = found || (e.Kind == audit.KindSandboxDestroy && e.SandboxID == id && e.Summary["reason"] == "paused retention")
	}
	if !found {
		t.Error("no sandbox.destroy record with reason paused retention")
	}
}

// TestLocalPausedBytesQuota: the paused quota counts bytes on disk too:
// a sandbox whose workspace would take its tenant past them is not
// paused.
func TestLocalPausedBytesQuota(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.MaxPausedBytesPerTenant = 1 })
	c := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": id, "path": "f.txt", "content": "some bytes"}))
	res := call(t, c, "sandbox_pause", map[string]any{"sandbox_id": id})
	if !res.IsError || !strings.Contains(text(res), "paused sandbox quota") || !strings.Contains(text(res), "this one takes") {
		t.Fatalf("pause over a byte quota of 1: %q; want the quota error", text(res))
	}
}
