package kubernetes_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestRecordSharedByReplicas: two providers of one instance (two gateway
// replicas) see one record: what one records (Touch, SetNetwork) the
// other lists, Get reports the new allowlist, a Recreate keeps the last
// use, a sandbox whose pod was deleted from outside keeps its record,
// and a provider of another instance in the same namespace can neither
// list nor write it.
func TestRecordSharedByReplicas(t *testing.T) {
	a := newEnv(t, "runc")
	b, err := kubernetes.New(t.Context(), a.cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := a.cfg
	other.Instance = "other-" + randomHex(4)
	stranger, err := kubernetes.New(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	spec := sandbox.Spec{Image: testImage, Owner: "owner-" + randomHex(8), Tenant: "tenant-" + randomHex(4),
		Network: []string{"example.com:443", "*.example.org"}, ExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Second)}
	sb := a.create(t, spec)
	record := func(p *kubernetes.Provider) sandbox.Info {
		t.Helper()
		infos, err := p.List(ctx, sandbox.Filter{ID: sb.ID()})
		if err != nil || len(infos) != 1 {
			t.Fatalf("List(ID) = %+v, %v; want the sandbox", infos, err)
		}
		return infos[0]
	}
	if infos, err := b.List(ctx, sandbox.Filter{Tenant: spec.Tenant}); err != nil || len(infos) != 1 || infos[0].ID != sb.ID() {
		t.Fatalf("the other replica's List(Tenant) = %+v, %v; want the sandbox", infos, err)
	}

	used := time.Now().UTC().Truncate(time.Millisecond)
	if err := b.Touch(ctx, sb.ID(), used); err != nil {
		t.Fatalf("Touch: %v", err)
	}
	narrowed := []string{"example.com:443"}
	if err := b.SetNetwork(ctx, sb.ID(), narrowed); err != nil {
		t.Fatalf("SetNetwork: %v", err)
	}
	if got := record(a.p); !got.LastUsed.Equal(used) || !slices.Equal(got.Network, narrowed) || !live(got) {
		t.Errorf("record seen by the first replica: %+v; want last use %v, network %v, live", got, used, narrowed)
	}
	if got, err := a.p.Get(ctx, sb.ID()); err != nil || !slices.Equal(got.Info().Network, narrowed) {
		t.Errorf("Get after SetNetwork: %+v, %v; want network %v", got, err, narrowed)
	}

	for name, err := range map[string]error{
		"Touch":      stranger.Touch(ctx, sb.ID(), time.Now()),
		"SetNetwork": stranger.SetNetwork(ctx, sb.ID(), []string{"*:*"}),
	} {
		if !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("another instance's %s of the sandbox: err = %v, want ErrNotFound", name, err)
		}
	}
	if infos, err := stranger.List(ctx, sandbox.Filter{ID: sb.ID()}); err != nil || len(infos) != 0 {
		t.Errorf("another instance's List(ID) = %+v, %v; want nothing", infos, err)
	}
	if got := record(a.p); !got.LastUsed.Equal(used) || !slices.Equal(got.Network, narrowed) {
		t.Errorf("record after another instance's writes: %+v; want it unchanged", got)
	}

	// A pod deleted from outside: the Secret, and so the record, stays.
	if err := a.cs.CoreV1().Pods(a.cfg.Namespace).Delete(ctx, "sandgate-"+sb.ID(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDead(t, a.p, sb)
	deadline := time.Now().Add(time.Minute)
	for got := record(b); got.State != kubernetes.StateNoPod; got = record(b) {
		if time.Now().After(deadline) {
			t.Fatalf("record a minute after its pod was deleted: %+v; want state %s", got, kubernetes.StateNoPod)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := record(b); !got.LastUsed.Equal(used) || !slices.Equal(got.Network, narrowed) || got.Owner != spec.Owner {
		t.Errorf("record of a sandbox without a pod: %+v; want its owner, last use and network", got)
	}
	spec.ID, spec.Network = sb.ID(), narrowed
	if _, err := b.Recreate(ctx, spec); err != nil {
		t.Fatalf("Recreate: %v", err)
	}
	if got := record(a.p); !got.LastUsed.Equal(used) || !slices.Equal(got.Network, narrowed) || !live(got) {
		t.Errorf("record after Recreate: %+v; want the last use kept, live", got)
	}
}

// live reports whether a listed sandbox runs or is starting (the kubelet
// reports a started pod as running up to a second late).
func live(info sandbox.Info) bool {
	return info.State == kubernetes.StateRunning || info.State == kubernetes.StatePending
}
