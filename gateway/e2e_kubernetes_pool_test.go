package gateway_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestKubernetesWarmPool: two replicas, each with the shipped pool size
// of a replica, on one instance of the cluster. A session's first call
// and a sandbox_create each claim a ready pod of their replica (the
// claim recorded on the pod's Secret); the claimed sandbox is its
// owner's on the other replica too; reconciliation by a replica leaves
// the other's ready pods alone and removes, once nobody recorded a use of
// them for as long as an idle sandbox may stay, the ready pods of a
// replica that is gone; a replica that shuts down removes its own.
func TestKubernetesWarmPool(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	inst := kubeInstanceOf(t, rc, "runc")
	pooled := func(c *gateway.Config) {
		c.Replicated, c.Pool = true, map[string]int{testImage: gateway.DefaultReplicaPoolSize}
	}
	a, b := inst.start(t, pooled), inst.start(t, pooled)
	waitMetric(t, a, poolReady, gateway.DefaultReplicaPoolSize)
	waitMetric(t, b, poolReady, gateway.DefaultReplicaPoolSize)
	p, err := kubernetes.New(t.Context(), kubernetes.Config(inst))
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	legacy := legacyClient(t, a.URL)
	opened := time.Now()
	if r, res := shell(t, legacy, "echo from the pool", nil); r.Stdout != "from the pool\n" {
		t.Fatalf("a session's first call on A: %+v %q", r, text(res))
	}
	t.Logf("a new session on A: initialize %v, first call (from the pool) %v", opened.Sub(began).Round(time.Millisecond), time.Since(opened).Round(time.Millisecond))
	id := createOn(t, modernClient(t, b.URL), nil)
	for name, tg := range map[string]*testGateway{"A": a, "B": b} {
		if hits := scrape(t, tg)[`sandgate_pool_claims_total{result="hit"}`]; hits != 1 {
			t.Fatalf("%s: %v pool hits after one start; want 1", name, hits)
		}
	}
	rec := recordOf(t, p, id)
	if rec.Pool != testImage || rec.Owner != gateway.LocalPrincipal.Digest() || rec.Tenant != "local" || rec.State != kubernetes.StateRunning {
		t.Fatalf("the record of the sandbox B claimed: %+v; want the pool's, claimed by the caller, running", rec)
	}
	if r, res := shell(t, modernClient(t, a.URL), "echo through A", map[string]any{"sandbox_id": id}); r.Stdout != "through A\n" {
		t.Fatalf("run_shell on A in the sandbox B claimed: %+v %q", r, text(res))
	}
	waitMetric(t, a, poolReady, gateway.DefaultReplicaPoolSize)
	waitMetric(t, b, poolReady, gateway.DefaultReplicaPoolSize)

	// B dies without removing its ready pods; A removes them only once
	// nobody recorded a use of them for as long as an idle sandbox may
	// stay (the default idle TTL plus the interval of recorded uses).
	ready := unclaimed(t, p)
	if len(ready) != 2*gateway.DefaultReplicaPoolSize {
		t.Fatalf("ready pods of both replicas: %v; want %d", ready, 2*gateway.DefaultReplicaPoolSize)
	}
	b.crash()
	a.gw.Reconcile(time.Now().Add(10 * time.Minute)) // past the grace, within the idle TTL
	if got := unclaimed(t, p); !slices.Equal(got, ready) {
		t.Fatalf("ready pods after A's reconciliation within the idle TTL: %v; want all of %v", got, ready)
	}
	later := time.Now().Add(sandbox.DefaultLimits.IdleTTL + sandbox.DefaultLimits.IdleTTL/8 + time.Minute)
	a.gw.TendPool(later) // A recorded uses of its ready pods meanwhile,
	for _, sid := range []string{id, sessionSandbox(t, p, legacy.GetSessionId())} {
		if err := p.Touch(t.Context(), sid, later); err != nil { // and the owners of theirs
			t.Fatal(err)
		}
	}
	a.gw.Reconcile(later.Add(time.Minute))
	left := unclaimed(t, p)
	if len(left) != gateway.DefaultReplicaPoolSize || scrape(t, a)[poolReady] != float64(gateway.DefaultReplicaPoolSize) {
		t.Fatalf("ready pods after A's reconciliation past the idle TTL: %v; want A's %d", left, gateway.DefaultReplicaPoolSize)
	}
	for _, sid := range left {
		if !slices.Contains(ready, sid) {
			t.Fatalf("ready pod %s after A's reconciliation is new; want A's own, unchanged (%v)", sid, ready)
		}
	}
	for _, sid := range []string{id, sessionSandbox(t, p, legacy.GetSessionId())} {
		if recordOf(t, p, sid).Owner == "" {
			t.Fatalf("claimed sandbox %s lost its owner", sid)
		}
	}

	// A shuts down: its ready pods go with it; B's claimed sandbox
	// (sessionless) stays for its owner.
	a.Close()
	if got := unclaimed(t, p); len(got) != 0 {
		t.Fatalf("ready pods after both replicas are gone: %v; want none", got)
	}
	if recordOf(t, p, id).Owner == "" {
		t.Fatal("the sessionless claimed sandbox did not outlive the replicas")
	}
	c := inst.start(t, func(c *gateway.Config) { c.Replicated = true })
	if r, res := shell(t, modernClient(t, c.URL), "echo still mine", map[string]any{"sandbox_id": id}); r.Stdout != "still mine\n" {
		t.Fatalf("the claimed sandbox through a new replica: %+v %q", r, text(res))
	}
}
