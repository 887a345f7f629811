package fleet

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// newTestFleet is a fleet on p with the shipped reconciliation times,
// its records in files (a single gateway) or shared (replicas).
func newTestFleet(t *testing.T, p sandbox.Provider, replicated bool) *Fleet {
	t.Helper()
	sink, err := audit.OpenFile(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	cfg := Config{VarDir: t.TempDir(), Image: sandboxtest.LocalImage, Limits: sandbox.DefaultLimits, MaxSandboxesPerTenant: 10,
		ReconcileInterval: time.Minute, ReconcileGrace: 2 * time.Minute, Replicated: replicated}
	return New(p, cfg, sink, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.New(), nil)
}

// madeElsewhere creates a sessionless sandbox of owner p in the provider
// behind the fleet's back, as another replica (or a create that outlived
// its caller) would.
func madeElsewhere(t *testing.T, p sandbox.Provider, owner identity.Identity) string {
	t.Helper()
	spec := sandbox.Spec{ID: newSandboxID(), Image: sandboxtest.LocalImage, Limits: sandbox.DefaultLimits, Owner: owner.Digest(),
		Tenant: owner.Tenant, ExpiresAt: time.Now().Add(sandbox.DefaultLimits.MaxLifetime)}
	sb, err := p.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return sb.ID()
}

func listed(t *testing.T, p sandbox.Provider, id string) bool {
	t.Helper()
	infos, err := p.List(t.Context(), sandbox.Filter{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return len(infos) == 1
}

var alice = identity.Identity{Issuer: "test", Subject: "alice", Tenant: "acme"}

// TestReconcileUntracked: one reconciliation loop, two strategies. A
// single gateway owns every sandbox its provider lists, so one it does
// not track, once older than any create takes, was lost track of and is
// removed. A replica must leave another replica's sandbox alone and acts
// on an untracked one only when it is due (here: idle by its record):
// with the shipped --on-idle pause it pauses it, files kept, as the
// replica that served it would have (that replica may be gone); with
// --on-idle destroy it removes it.
func TestReconcileUntracked(t *testing.T) {
	for _, tc := range []struct {
		name       string
		replicated bool
		onIdle     string
		keptAt     time.Duration // a reconciliation this long after the create keeps it
		dueAt      time.Duration // and one this long after pauses or removes it
		paused     bool          // paused, not removed
	}{
		{"single gateway", false, "", time.Minute, 3 * time.Minute, false},
		{"replicas", true, "", 3 * time.Minute, sandbox.DefaultLimits.IdleTTL + time.Hour, true},
		{"replicas destroying idle sandboxes", true, OnIdleDestroy, 3 * time.Minute, sandbox.DefaultLimits.IdleTTL + time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sandboxtest.NewLocal(t)
			m := newTestFleet(t, p, tc.replicated)
			m.cfg.OnIdle = tc.onIdle
			id := madeElsewhere(t, p, alice)
			made := time.Now()
			m.ReconcileTracked(t.Context(), made.Add(tc.keptAt))
			if !listed(t, p, id) {
				t.Fatalf("reconciliation %s after the create removed the untracked sandbox", tc.keptAt)
			}
			m.ReconcileTracked(t.Context(), made.Add(tc.dueAt))
			infos, err := p.List(t.Context(), sandbox.Filter{ID: id})
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.paused && (len(infos) != 1 || infos[0].State != sandbox.StatePaused):
				t.Fatalf("reconciliation %s after the create: %+v, want the untracked sandbox paused", tc.dueAt, infos)
			case !tc.paused && len(infos) != 0:
				t.Fatalf("reconciliation %s after the create left the untracked sandbox: %+v", tc.dueAt, infos)
			}
		})
	}
}

// TestReconcileUnlisted: a tracked sandbox whose record is gone was
// removed by another replica, which a replica forgets; a single gateway
// keeps tracking one whose container vanished, so that its owner's next
// call replaces it on its workspace.
func TestReconcileUnlisted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		replicated bool
		tracked    bool
	}{
		{"single gateway", false, true},
		{"replicas", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sandboxtest.NewLocal(t)
			m := newTestFleet(t, p, tc.replicated)
			b, err := m.Create(t.Context(), alice, "", sandboxtest.LocalImage, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Lose(b.ID()); err != nil {
				t.Fatal(err)
			}
			m.ReconcileTracked(context.WithoutCancel(t.Context()), time.Now())
			if got := m.Tracked(b.ID()) != nil; got != tc.tracked {
				t.Fatalf("after its record went: tracked %v, want %v", got, tc.tracked)
			}
		})
	}
}

// TestRecordsChosenOnce: New picks the records from Config.Replicated and
// nothing else asks again.
func TestRecordsChosenOnce(t *testing.T) {
	p := sandboxtest.NewLocal(t)
	if _, ok := newTestFleet(t, p, false).records.(fileRecords); !ok {
		t.Error("a single gateway's fleet does not keep its records in files")
	}
	if r, ok := newTestFleet(t, p, true).records.(sharedRecords); !ok || r.rec == nil || r.claims == nil {
		t.Errorf("a replica's fleet does not share its records through the provider: %#v", r)
	}
}

// TestPausedByAnotherReplica: replicas share pauses through the
// provider's records. A sandbox replica A paused, which replica B serves
// too, is resumed by B's next call, with its files and a note that says
// it was paused, not replaced; A's next call then finds it running.
func TestPausedByAnotherReplica(t *testing.T) {
	p := sandboxtest.NewLocal(t)
	a, b := newTestFleet(t, p, true), newTestFleet(t, p, true)
	boxA, err := a.Create(t.Context(), alice, "", sandboxtest.LocalImage, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := a.Attach(t.Context(), boxA, alice)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Call(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: "kept.txt", Content: "kept"}, nil); err != nil {
		t.Fatal(err)
	}
	boxA.Release()
	boxB, err := b.Get(t.Context(), alice, "", boxA.ID())
	if err != nil {
		t.Fatalf("replica B's lookup: %v", err)
	}
	if _, _, err := b.Attach(t.Context(), boxB, alice); err != nil { // B holds a connection too
		t.Fatal(err)
	}
	boxB.Release()

	if err := a.Pause(t.Context(), boxA, alice, "test", PauseOptions{}); err != nil {
		t.Fatalf("replica A's pause: %v", err)
	}
	c, note, err := b.Attach(t.Context(), boxB, alice)
	if err != nil {
		t.Fatalf("replica B's call on a sandbox A paused: %v", err)
	}
	var got protocol.ReadResult
	err = c.Call(t.Context(), protocol.OpFileRead, protocol.ReadRequest{Path: "kept.txt"}, &got)
	boxB.Release()
	if err != nil || got.Content != "kept" {
		t.Fatalf("after B resumed it: %q, %v; want the file written before the pause", got.Content, err)
	}
	if note.Key != MetaSandboxResumed || !strings.Contains(note.Text, "was paused") {
		t.Errorf("B's note: %+v, want that the sandbox was paused and resumed", note)
	}
	if _, _, err := a.Attach(t.Context(), boxA, alice); err != nil {
		t.Fatalf("replica A's call after B resumed it: %v", err)
	}
	boxA.Release()
	if infos, err := p.List(t.Context(), sandbox.Filter{ID: boxA.ID()}); err != nil || len(infos) != 1 || infos[0].State == sandbox.StatePaused {
		t.Errorf("listed after both calls: %+v, %v; want it running", infos, err)
	}
}
