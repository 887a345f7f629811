package gateway_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/sandbox"
)

// An E2B client's timeout, template and metadata outlive the gateway
// that was told them: a restarted gateway and every replica report and
// enforce them (gateway/fleet/deadline.go, sandbox.Spec.Template and Metadata).

// e2bBase is the E2B API's origin of tg, which runs without
// authentication: every caller is the same local principal.
func e2bBase(tg *testGateway) string { return strings.TrimSuffix(tg.URL, "/mcp") }

// e2bFind lists the sandboxes whose metadata has key=value at base.
func e2bFind(t *testing.T, base, key, value string) []e2bListed {
	t.Helper()
	var page []e2bListed
	if resp := e2bCall(t, "GET", base+"/v2/sandboxes?metadata="+url.QueryEscape(key+"="+value), nil, nil, &page); resp.StatusCode != http.StatusOK {
		t.Fatalf("list by metadata: %d", resp.StatusCode)
	}
	return page
}

// TestLocalE2BRestartKeepsTimeout: after a crash and restart the
// sandbox's endAt, template and metadata are what its creator set, a
// metadata filter finds it, and the restarted gateway removes it when
// its timeout passes.
func TestLocalE2BRestartKeepsTimeout(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	run := randHex(4)
	var made e2bCreated
	body := map[string]any{"templateID": "code-interpreter-v1", "timeout": 10, "metadata": map[string]string{"run": run}}
	if resp := e2bCall(t, "POST", e2bBase(tg)+"/v2/sandboxes", nil, body, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	var before e2bListed
	e2bCall(t, "GET", e2bBase(tg)+"/sandboxes/"+made.SandboxID, nil, nil, &before)
	tg.crash()

	tg2 := restart(t, tg)
	var after e2bListed
	if resp := e2bCall(t, "GET", e2bBase(tg2)+"/sandboxes/"+made.SandboxID, nil, nil, &after); resp.StatusCode != http.StatusOK {
		t.Fatalf("get after restart: %d (did the restart outlast the 10 s timeout?)", resp.StatusCode)
	}
	if !after.EndAt.Equal(before.EndAt) || after.TemplateID != "code-interpreter-v1" || after.Metadata["run"] != run {
		t.Fatalf("after restart: endAt %v, template %q, metadata %v; want %v, code-interpreter-v1, run=%s", after.EndAt, after.TemplateID, after.Metadata, before.EndAt, run)
	}
	if page := e2bFind(t, e2bBase(tg2), "run", run); len(page) != 1 || page[0].SandboxID != made.SandboxID {
		t.Fatalf("list by metadata after restart: %+v", page)
	}
	// The crashed gateway's timer may remove it first; the restarted
	// one still records the removal for the timeout only if it re-armed it.
	waitFor(t, time.Minute, "destroy record of the restarted gateway", func() bool {
		return destroyedFor(t, tg2.AuditPath, made.SandboxID) == "timeout set by its owner"
	})
	if resp := e2bCall(t, "GET", e2bBase(tg2)+"/sandboxes/"+made.SandboxID, nil, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("get after the timeout: %d, want 404", resp.StatusCode)
	}
}

// destroyedFor returns the reason of sandbox id's destroy record, or "".
func destroyedFor(t testing.TB, path, id string) string {
	for _, ev := range auditRecords(t, path) {
		if ev.Kind == audit.KindSandboxDestroy && ev.SandboxID == id {
			return ev.Summary["reason"]
		}
	}
	return ""
}

// TestReplicasE2BTimeoutAndMetadata: replicas see each other's template,
// metadata and timeout; a timeout extended on one spares the sandbox on
// the replica whose timer ran first; and a replica that does not track
// a sandbox removes it once its timeout passed, not before.
func TestReplicasE2BTimeoutAndMetadata(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	run := randHex(4)
	create := func(timeout int) string {
		var made e2bCreated
		body := map[string]any{"templateID": "base", "timeout": timeout, "metadata": map[string]string{"run": run}}
		if resp := e2bCall(t, "POST", e2bBase(a)+"/v2/sandboxes", nil, body, &made); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create on A: %d", resp.StatusCode)
		}
		return made.SandboxID
	}
	id := create(10)
	var onA, onB e2bListed
	e2bCall(t, "GET", e2bBase(a)+"/sandboxes/"+id, nil, nil, &onA)
	if resp := e2bCall(t, "GET", e2bBase(b)+"/sandboxes/"+id, nil, nil, &onB); resp.StatusCode != http.StatusOK {
		t.Fatalf("get on B: %d", resp.StatusCode)
	}
	if !onB.EndAt.Equal(onA.EndAt) || onB.TemplateID != "base" || onB.Metadata["run"] != run {
		t.Fatalf("on B: endAt %v, template %q, metadata %v; want A's %v, base, run=%s", onB.EndAt, onB.TemplateID, onB.Metadata, onA.EndAt, run)
	}
	if page := e2bFind(t, e2bBase(b), "run", run); len(page) != 1 || page[0].SandboxID != id {
		t.Fatalf("list by metadata on B: %+v", page)
	}

	// Extended on B: A's timer, set for the first timeout, finds the
	// later one in the record and spares the sandbox.
	if resp := e2bCall(t, "POST", e2bBase(b)+"/sandboxes/"+id+"/timeout", nil, map[string]any{"timeout": 3600}, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("timeout on B: %d", resp.StatusCode)
	}
	waitFor(t, time.Minute, "A to find the extended timeout", func() bool {
		return strings.Contains(a.Logs.String(), "timeout extended by another replica")
	})
	if !exists(t, local, id) {
		t.Fatal("removed at its first timeout, though B extended it")
	}
	e2bCall(t, "GET", e2bBase(a)+"/sandboxes/"+id, nil, nil, &onA)
	e2bCall(t, "GET", e2bBase(b)+"/sandboxes/"+id, nil, nil, &onB)
	if !onA.EndAt.Equal(onB.EndAt) || time.Until(onA.EndAt) < 30*time.Minute {
		t.Fatalf("endAt on A %v, on B %v; want both B's, an hour on", onA.EndAt, onB.EndAt)
	}

	// Changed on B, a sandbox A tracks shows B's timeout on A at once,
	// in a get and in a listing, not after A's next reconciliation.
	changed := create(600)
	if resp := e2bCall(t, "POST", e2bBase(b)+"/sandboxes/"+changed+"/timeout", nil, map[string]any{"timeout": 1800}, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("timeout on B: %d", resp.StatusCode)
	}
	e2bCall(t, "GET", e2bBase(b)+"/sandboxes/"+changed, nil, nil, &onB)
	for _, listed := range e2bFind(t, e2bBase(a), "run", run) { // listed first: a get would bring A up to date
		if listed.SandboxID == changed && !listed.EndAt.Equal(onB.EndAt) {
			t.Fatalf("right after B set 30 minutes: A lists endAt %v, B says %v", listed.EndAt, onB.EndAt)
		}
	}
	if resp := e2bCall(t, "POST", e2bBase(b)+"/sandboxes/"+changed+"/timeout", nil, map[string]any{"timeout": 2400}, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("timeout on B: %d", resp.StatusCode)
	}
	e2bCall(t, "GET", e2bBase(b)+"/sandboxes/"+changed, nil, nil, &onB)
	e2bCall(t, "GET", e2bBase(a)+"/sandboxes/"+changed, nil, nil, &onA)
	if !onA.EndAt.Equal(onB.EndAt) || time.Until(onA.EndAt) < 30*time.Minute {
		t.Fatalf("right after B set 40 minutes: endAt on A %v, on B %v", onA.EndAt, onB.EndAt)
	}
	if resp := e2bCall(t, "DELETE", e2bBase(a)+"/sandboxes/"+changed, nil, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("kill on A: %d", resp.StatusCode)
	}

	// Untracked by B: B's reconciliation removes it once its timeout
	// passed (as of a time given to it), and not before.
	other := create(600)
	b.gw.Reconcile(time.Now())
	if !exists(t, local, other) {
		t.Fatal("B removed a sandbox whose timeout had not passed")
	}
	b.gw.Reconcile(time.Now().Add(15 * time.Minute))
	if exists(t, local, other) {
		t.Fatal("B kept a sandbox whose timeout passed")
	}
}

// TestReplicasE2BPausedWithoutAutoResume: a sandbox made with
// lifecycle {onTimeout: pause, autoResume: false} and paused on replica
// A stays paused when its data plane is called on replica B, which says
// so, until connect resumes it: the pause's reason is in the provider's
// record, which every replica reads (and a restarted gateway too).
func TestReplicasE2BPausedWithoutAutoResume(t *testing.T) {
	t.Parallel()
	key := []byte(randHex(32)) // replicas share the key of access tokens, as a deployment's do
	a, b, local := replicaPair(t, func(c *gateway.Config) { c.E2B.AccessKey = key })
	var made e2bCreated
	body := map[string]any{"templateID": "base", "timeout": 600, "lifecycle": map[string]any{"onTimeout": "pause", "autoResume": false}}
	if resp := e2bCall(t, "POST", e2bBase(a)+"/v2/sandboxes", nil, body, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create on A: %d", resp.StatusCode)
	}
	envd := map[string]string{"E2b-Sandbox-Id": made.SandboxID, "E2b-Sandbox-Port": "49983", "X-Access-Token": made.EnvdAccessToken}
	up, _ := http.NewRequestWithContext(t.Context(), "POST", e2bBase(a)+"/files?path=kept.txt", strings.NewReader("kept"))
	up.Header.Set("Content-Type", "application/octet-stream")
	for k, v := range envd {
		up.Header.Set(k, v)
	}
	if resp, err := http.DefaultClient.Do(up); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload on A: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp := e2bCall(t, "GET", e2bBase(b)+"/files?path=kept.txt", envd, nil, nil); resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("download on B before the pause: %d %s", resp.StatusCode, raw) // B tracks the sandbox too
	}
	if resp := e2bCall(t, "POST", e2bBase(a)+"/sandboxes/"+made.SandboxID+"/pause", nil, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("pause on A: %d", resp.StatusCode)
	}
	if infos, err := local.List(t.Context(), sandbox.Filter{ID: made.SandboxID}); err != nil || len(infos) != 1 || infos[0].PausedFor != fleet.ReasonE2BPause {
		t.Fatalf("the provider's record of the pause: %+v, %v; want paused for %q", infos, err, fleet.ReasonE2BPause)
	}
	resp := e2bCall(t, "GET", e2bBase(b)+"/files?path=kept.txt", envd, nil, nil)
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK || !strings.Contains(string(raw), "paused") {
		t.Fatalf("download on B of a sandbox A paused without autoResume: %d %s; want a refusal that says it is paused", resp.StatusCode, raw)
	}
	if infos, _ := local.List(t.Context(), sandbox.Filter{ID: made.SandboxID}); len(infos) != 1 || infos[0].State != sandbox.StatePaused {
		t.Fatalf("after B's refused request: %+v; want it still paused", infos)
	}
	if resp := e2bCall(t, "POST", e2bBase(b)+"/sandboxes/"+made.SandboxID+"/connect", nil, map[string]any{"timeout": 600}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("connect on B: %d; want 201, resumed", resp.StatusCode)
	}
	if resp := e2bCall(t, "GET", e2bBase(b)+"/files?path=kept.txt", envd, nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("download on B after connect: %d", resp.StatusCode)
	}
}
