package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
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
