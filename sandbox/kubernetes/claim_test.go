package kubernetes_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestPoolClaims: a pooled sandbox is claimed by exactly one of several
// concurrent claims; afterwards Get, List (by every field the claim set)
// and the pod's kubelet deadline say the claimant's; a second claim, and
// RemoveUnclaimed, are refused with ErrClaimed and change nothing; the
// claimant's sandbox runs commands. An unclaimed one is removed by
// RemoveUnclaimed, Secret and pod.
func TestPoolClaims(t *testing.T) {
	env := newEnv(t, "runc")
	ctx := t.Context()
	pooledSpec := sandbox.Spec{Image: testImage, Pool: testImage, ExpiresAt: time.Now().Add(8 * time.Hour)}
	pooled := env.create(t, pooledSpec)
	id := pooled.ID()
	if info := pooled.Info(); info.Owner != "" || info.Pool != testImage {
		t.Fatalf("pooled sandbox: %+v; want no owner, pool %s", info, testImage)
	}

	claimants := make([]sandbox.Spec, 4)
	for i := range claimants {
		claimants[i] = sandbox.Spec{Image: testImage, Pool: testImage, Owner: "owner-" + randomHex(8), Session: "session-" + randomHex(8),
			Client: "client-" + randomHex(8), Tenant: "tenant-" + randomHex(4), Network: []string{"example.com:443"},
			ExpiresAt: time.Now().Add(2 * time.Hour).Truncate(time.Second), Metadata: map[string]string{"k": randomHex(4)}}
	}
	infos := make([]sandbox.Info, len(claimants))
	errs := make([]error, len(claimants))
	var wg sync.WaitGroup
	for i, spec := range claimants {
		wg.Go(func() { infos[i], errs[i] = env.p.Claim(ctx, id, spec) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("claims %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, sandbox.ErrClaimed):
			t.Errorf("losing claim %d: %v; want ErrClaimed", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no claim succeeded: %v", errs)
	}
	spec := claimants[winner]
	t.Logf("claim %d of %d won", winner, len(claimants))
	same := func(what string, info sandbox.Info) {
		t.Helper()
		if info.ID != id || info.Owner != spec.Owner || info.Session != spec.Session || info.Client != spec.Client ||
			info.Tenant != spec.Tenant || !slices.Equal(info.Network, spec.Network) || !info.ExpiresAt.Equal(spec.ExpiresAt) ||
			info.Metadata["k"] != spec.Metadata["k"] || info.Pool != testImage || info.Image != testImage {
			t.Errorf("%s: %+v; want the claimant's %+v", what, info, spec)
		}
	}
	same("Claim's answer", infos[winner])
	if time.Since(infos[winner].CreatedAt) > time.Minute {
		t.Errorf("claimed sandbox's CreatedAt %v: want the claim's time", infos[winner].CreatedAt)
	}

	got, err := env.p.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get after the claim: %v", err)
	}
	same("Get", got.Info())
	for _, f := range []sandbox.Filter{{Owner: spec.Owner}, {Session: spec.Session}, {Client: spec.Client}, {Tenant: spec.Tenant}, {ID: id}} {
		listed, err := env.p.List(ctx, f)
		if err != nil || len(listed) != 1 {
			t.Fatalf("List(%+v) = %+v, %v; want the claimed sandbox", f, listed, err)
		}
		same("List", listed[0])
		// Running, or pending while the kubelet has not yet reported its
		// started container; not without a pod: the pod was found by
		// the claimant's labels too.
		if st := listed[0].State; st != kubernetes.StateRunning && st != kubernetes.StatePending {
			t.Errorf("List(%+v): state %q; want its pod's (the pod carries the claimant's labels)", f, st)
		}
	}
	// The records alone, as of the claim: the claim is in them at once.
	records, err := env.p.List(ctx, sandbox.Filter{Tenant: spec.Tenant, RecordsOnly: true, Since: id})
	if err != nil || len(records) != 1 {
		t.Fatalf("List(records of the tenant since the claim) = %+v, %v; want the claimed sandbox", records, err)
	}
	same("List of records", records[0])
	pod, err := env.cs.CoreV1().Pods(env.cfg.Namespace).Get(ctx, "sandgate-"+id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created, _ := time.Parse(time.RFC3339Nano, pod.Annotations[kubernetes.AnnotationCreatedAt])
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d > int64(time.Until(spec.ExpiresAt).Seconds())+int64(time.Since(created).Seconds())+60 {
		t.Errorf("claimed pod's activeDeadlineSeconds %v: want it brought down to the claim's expiry (%v from now)", d, time.Until(spec.ExpiresAt))
	}

	if _, err := env.p.Claim(ctx, id, claimants[(winner+1)%len(claimants)]); !errors.Is(err, sandbox.ErrClaimed) {
		t.Errorf("a second claim: %v; want ErrClaimed", err)
	}
	if err := env.p.RemoveUnclaimed(ctx, id); !errors.Is(err, sandbox.ErrClaimed) {
		t.Errorf("RemoveUnclaimed of the claimed sandbox: %v; want ErrClaimed", err)
	}
	if out, code := exec(t, got, "sh", "-c", "echo claimed"); code != 0 || out != "claimed\n" {
		t.Errorf("a command in the claimed sandbox: %q, exit %d", out, code)
	}
	if _, err := env.p.Claim(ctx, randomHex(16), spec); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("claim of a sandbox that does not exist: %v; want ErrNotFound", err)
	}

	// An owned sandbox made without the pool is not claimable either.
	owned := env.create(t, sandbox.Spec{Image: testImage, Owner: "owner-" + randomHex(8)})
	if _, err := env.p.Claim(ctx, owned.ID(), spec); !errors.Is(err, sandbox.ErrClaimed) {
		t.Errorf("claim of a sandbox made without the pool: %v; want ErrClaimed", err)
	}
	if err := env.p.RemoveUnclaimed(ctx, owned.ID()); !errors.Is(err, sandbox.ErrClaimed) {
		t.Errorf("RemoveUnclaimed of a sandbox made without the pool: %v; want ErrClaimed", err)
	}

	spare := env.create(t, pooledSpec)
	if err := env.p.RemoveUnclaimed(ctx, spare.ID()); err != nil {
		t.Fatalf("RemoveUnclaimed of an unclaimed pooled sandbox: %v", err)
	}
	if left, err := env.p.List(ctx, sandbox.Filter{ID: spare.ID()}); err != nil || len(left) != 0 {
		t.Errorf("List after RemoveUnclaimed: %+v, %v; want nothing", left, err)
	}
	if _, err := env.p.Get(ctx, spare.ID()); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get after RemoveUnclaimed: %v; want ErrNotFound", err)
	}
}
