package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
)

// TestReplicasWarmPool: replicated gateways each keep a warm pool, and
// the provider records their claims (sandbox.PoolClaims). A claimed
// sandbox is its owner's on every replica; reconciliation by another
// replica leaves a live replica's ready sandboxes alone, removes the
// unclaimed ones of a replica that is gone once nobody recorded a use of
// them for as long as an idle sandbox may stay, and a replica replaces
// its ready sandboxes before a claim could no longer give them a whole
// lifetime.
func TestReplicasWarmPool(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, func(c *gateway.Config) { c.Pool = map[string]int{testImage: 2} })
	waitMetric(t, a, poolReady, 2)
	waitMetric(t, b, poolReady, 2)

	// A sessionless sandbox from A's pool, used through B.
	id := createOn(t, modernClient(t, a.URL), nil)
	if hits := scrape(t, a)[`sandgate_pool_claims_total{result="hit"}`]; hits != 1 {
		t.Fatalf("sandbox_create on A with a full pool: %v pool hits, want 1", hits)
	}
	rec := recordOf(t, local, id)
	if rec.Pool != testImage || rec.Owner != gateway.LocalPrincipal.Digest() || rec.Tenant != "local" || rec.Session != "" {
		t.Fatalf("the provider's record of the claimed sandbox: %+v; want the pool's, claimed by the caller", rec)
	}
	if r, res := shell(t, modernClient(t, b.URL), "echo through B", map[string]any{"sandbox_id": id}); r.Stdout != "through B\n" {
		t.Fatalf("run_shell on B in the sandbox A claimed: %+v %q", r, text(res))
	}
	// A legacy session's first call on B takes one of B's.
	legacy := legacyClient(t, b.URL)
	shell(t, legacy, "true", nil)
	if hits := scrape(t, b)[`sandgate_pool_claims_total{result="hit"}`]; hits != 1 {
		t.Fatalf("a session's first call on B: %v pool hits, want 1", hits)
	}
	if bound := recordOf(t, local, sessionSandbox(t, local, legacy.GetSessionId())); bound.Pool != testImage || bound.Session != legacy.GetSessionId() {
		t.Fatalf("the session's sandbox: %+v; want one of the pool's, bound to the session", bound)
	}
	mustOK(t, "sandbox_destroy on B", call(t, modernClient(t, b.URL), "sandbox_destroy", map[string]any{"sandbox_id": id}))
	waitMetric(t, a, poolReady, 2)
	waitMetric(t, b, poolReady, 2)

	// An unclaimed pooled sandbox no replica holds: what a replica that
	// died leaves.
	ghost, err := local.Create(t.Context(), sandbox.Spec{Image: testImage, Pool: testImage, ExpiresAt: time.Now().Add(8 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	live := unclaimed(t, local)
	if len(live) != 5 || !slices.Contains(live, ghost.ID()) {
		t.Fatalf("unclaimed pooled sandboxes: %v; want the two of each replica and the ghost", live)
	}
	b.gw.Reconcile(time.Now().Add(10 * time.Minute)) // past the grace, within the idle TTL
	if got := unclaimed(t, local); !slices.Equal(got, live) {
		t.Fatalf("after B's reconciliation within the idle TTL: %v; want all of %v", got, live)
	}

	// Past the idle TTL (startReplica's hour) and the interval of recorded
	// uses: the replicas recorded theirs meanwhile, nobody the ghost's.
	later := time.Now().Add(time.Hour + time.Hour/8 + time.Minute)
	a.gw.TendPool(later)
	b.gw.TendPool(later)
	b.gw.Reconcile(later.Add(time.Minute))
	if got := unclaimed(t, local); len(got) != 4 || slices.Contains(got, ghost.ID()) {
		t.Fatalf("after B's reconciliation past the idle TTL: %v; want the replicas' four without the ghost %s", got, ghost.ID())
	}
	if !exists(t, local, sessionSandbox(t, local, legacy.GetSessionId())) {
		t.Fatal("B's reconciliation removed its own session's sandbox")
	}

	// Near the end of their maximum age a replica replaces its ready
	// sandboxes: a claim gives a whole lifetime from the claim.
	before := unclaimed(t, local)
	a.gw.TendPool(time.Now().Add(sandbox.DefaultLimits.MaxLifetime + time.Minute))
	waitMetric(t, a, poolReady, 2)
	after := unclaimed(t, local)
	kept := 0
	for _, id := range after {
		if slices.Contains(before, id) {
			kept++
		}
	}
	if len(after) != 4 || kept != 2 {
		t.Fatalf("A's ready sandboxes past their age: before %v, after %v; want A's two replaced and B's two kept", before, after)
	}
	if hits := scrape(t, a)[`sandgate_pool_claims_total{result="hit"}`]; hits != 1 {
		t.Fatalf("pool hits on A: %v", hits)
	}
	createOn(t, modernClient(t, a.URL), nil)
	if hits := scrape(t, a)[`sandgate_pool_claims_total{result="hit"}`]; hits != 2 {
		t.Fatalf("sandbox_create on A from its renewed pool: %v pool hits in all, want 2", hits)
	}
}

// recordOf returns the provider's record of sandbox id.
func recordOf(t testing.TB, p sandbox.Provider, id string) sandbox.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	infos, err := p.List(ctx, sandbox.Filter{ID: id})
	if err != nil || len(infos) != 1 {
		t.Fatalf("record of sandbox %s: %+v, %v", id, infos, err)
	}
	return infos[0]
}

// unclaimed lists the ids of the provider's unclaimed pooled sandboxes,
// sorted.
func unclaimed(t testing.TB, p sandbox.Provider) []string {
	t.Helper()
	infos, err := p.List(t.Context(), sandbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, info := range infos {
		if info.Pool != "" && info.Owner == "" {
			ids = append(ids, info.ID)
		}
	}
	slices.Sort(ids)
	return ids
}
