package gateway_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
)

// A client's default sandbox is recorded in the provider, not only in a
// gateway's memory: a restarted gateway and every replica find it.

// TestLocalDefaultSandboxRestart: after a crash and restart, a client's
// calls without sandbox_id go on in the same default sandbox, its files
// intact, whether it was made fresh or claimed from the warm pool (whose
// claim record carries the client).
func TestLocalDefaultSandboxRestart(t *testing.T) {
	t.Parallel()
	for name, pool := range map[string]int{"fresh": 0, "pooled": 1} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tg := startLocalGateway(t, func(c *gateway.Config) {
				if pool > 0 {
					c.Pool = map[string]int{testImage: pool}
				}
			})
			if pool > 0 {
				waitMetric(t, tg, poolReady, float64(pool))
			}
			a := namedModernClient(t, tg.URL, "client-a")
			res := mustOK(t, "write_file", call(t, a, "write_file", map[string]any{"path": "kept.txt", "content": "kept"}))
			id := noteID(t, res, createdDefault)[0]
			if pool > 0 {
				if c := readClaim(t, tg, id); c["client"] == nil || c["client"] == "" {
					t.Fatalf("claim record of the pooled default %s names no client: %v", id, c)
				}
				// No refill in flight at the crash: a runner forked at that
				// moment would hold the audit log's lock until it execs.
				waitMetric(t, tg, poolReady, float64(pool))
			}
			tg.crash()
			tg2 := restart(t, tg)

			a2 := namedModernClient(t, tg2.URL, "client-a")
			res = mustOK(t, "read_file", call(t, a2, "read_file", map[string]any{"path": "kept.txt"}))
			if got := noteID(t, res, usingDefault)[0]; got != id || !strings.Contains(text(res), "kept") {
				t.Fatalf("after the restart: default %s (want %s): %s", got, id, text(res))
			}
			b := namedModernClient(t, tg2.URL, "client-b")
			if other := noteID(t, mustOK(t, "run_shell", call(t, b, "run_shell", map[string]any{"command": "true"})), createdDefault)[0]; other == id {
				t.Fatalf("after the restart, another client got a's default %s", id)
			}
		})
	}
}

// TestReplicasDefaultSandbox: one client has one default sandbox
// whichever replica it calls; a default destroyed on one replica is
// replaced once, and the other replica, which still had the old one in
// memory, finds the new one.
func TestReplicasDefaultSandbox(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	ca, cb := namedModernClient(t, a.URL, "client-a"), namedModernClient(t, b.URL, "client-a")

	res := mustOK(t, "write_file on A", call(t, ca, "write_file", map[string]any{"path": "f.txt", "content": "from A"}))
	id := noteID(t, res, createdDefault)[0]
	res = mustOK(t, "read_file on B", call(t, cb, "read_file", map[string]any{"path": "f.txt"}))
	if got := noteID(t, res, usingDefault)[0]; got != id || !strings.Contains(text(res), "from A") {
		t.Fatalf("B's default %s (want A's %s): %s", got, id, text(res))
	}
	if info := mustOK(t, "sandbox_info on B", call(t, cb, "sandbox_info", nil)); !strings.Contains(text(info), id) {
		t.Errorf("sandbox_info without sandbox_id on B does not describe %s: %s", id, text(info))
	}
	assertDefaults(t, local, id)

	// Destroyed on B; A still holds the old one in memory.
	mustOK(t, "sandbox_destroy on B", call(t, cb, "sandbox_destroy", nil))
	res = mustOK(t, "run_shell on A", call(t, ca, "run_shell", map[string]any{"command": "ls"}))
	ids := noteID(t, res, replacedDefault)
	if ids[0] != id || ids[1] == id {
		t.Fatalf("A's note names %v, want %s replaced by a new default", ids, id)
	}
	if got := noteID(t, mustOK(t, "run_shell on B", call(t, cb, "run_shell", map[string]any{"command": "true"})), usingDefault)[0]; got != ids[1] {
		t.Fatalf("B's default after the replacement: %s, want A's new %s", got, ids[1])
	}
	assertDefaults(t, local, ids[1])
}

// anyDefault matches the note of a call that used a default sandbox.
var anyDefault = regexp.MustCompile(`(?:created|using) your default sandbox ([0-9a-f]{32})`)

// TestReplicasDefaultSandboxRace: first calls of one client on both
// replicas at once leave one default sandbox, which every call used:
// each replica that made a newer one destroyed it and took the oldest.
func TestReplicasDefaultSandboxRace(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	ca, cb := namedModernClient(t, a.URL, "racer"), namedModernClient(t, b.URL, "racer")
	var mu sync.Mutex
	used := map[string]int{}
	var wg sync.WaitGroup
	for i := range 6 {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		wg.Go(func() {
			res, err := callErr(t.Context(), c, "run_shell", map[string]any{"command": "true"})
			if err != nil || res.IsError {
				t.Errorf("first call %d: %v %s", i, err, text(res))
				return
			}
			m := anyDefault.FindStringSubmatch(allText(res))
			if m == nil {
				t.Errorf("first call %d names no default sandbox: %s", i, text(res))
				return
			}
			mu.Lock()
			used[m[1]]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(used) != 1 {
		t.Fatalf("calls used defaults %v, want one", used)
	}
	for id := range used {
		assertDefaults(t, local, id)
	}
}

// assertDefaults fails t unless the provider holds exactly one sandbox,
// id, and it is a client's default.
func assertDefaults(t *testing.T, p sandbox.Provider, id string) {
	t.Helper()
	infos, err := p.List(t.Context(), sandbox.Filter{Owner: gateway.LocalPrincipal.Digest()})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].ID != id || infos[0].Client == "" {
		t.Fatalf("provider holds %+v, want only the default sandbox %s", infos, id)
	}
}

// TestReplicasDefaultSandboxDuplicate: a replica whose creation of a
// client's default raced another's (both missed the other's record)
// keeps the oldest: a newer one it made is destroyed, and it uses the
// other replica's.
func TestReplicasDefaultSandboxDuplicate(t *testing.T) {
	t.Parallel()
	a, b, local := replicaPair(t, nil)
	ca := namedModernClient(t, a.URL, "client-a")
	id := noteID(t, mustOK(t, "write_file on A", call(t, ca, "write_file", map[string]any{"path": "f.txt", "content": "from A"})), createdDefault)[0]
	kept, err := b.gw.RaceDefault(t.Context(), "client-a")
	if err != nil || kept != id {
		t.Fatalf("B's raced creation kept %q, %v; want A's older %s", kept, err, id)
	}
	assertDefaults(t, local, id)
	cb := namedModernClient(t, b.URL, "client-a")
	res := mustOK(t, "read_file on B", call(t, cb, "read_file", map[string]any{"path": "f.txt"}))
	if got := noteID(t, res, usingDefault)[0]; got != id || !strings.Contains(text(res), "from A") {
		t.Fatalf("B's default %s (want %s): %s", got, id, text(res))
	}
}
