package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotOnDocker: a snapshot of a running Docker sandbox holds its
// files byte for byte and costs about their size on disk; a sandbox made
// from it and two forks start with them; and a snapshot a crash left
// unfinished (its record not marked ready), or a fork's a crash left, is
// rolled back by the next gateway, its copy deleted.
func TestSnapshotOnDocker(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	cur := c // the client sum calls through
	src := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil)))["sandbox_id"].(string)
	sum := func(id string) string {
		t.Helper()
		r, res := shell(t, cur, "sha256sum data.bin | cut -c1-64", map[string]any{"sandbox_id": id})
		if res.IsError {
			t.Fatalf("sha256sum in %s: %s", id, text(res))
		}
		return strings.TrimSpace(r.Stdout)
	}
	if _, res := shell(t, c, "head -c 32M /dev/urandom > data.bin", map[string]any{"sandbox_id": src}); res.IsError {
		t.Fatal(text(res))
	}
	want := sum(src)
	snap := structuredAs[map[string]any](t, mustOK(t, "sandbox_snapshot", call(t, c, "sandbox_snapshot", map[string]any{"sandbox_id": src, "name": "data"})))
	snapID := snap["snapshot_id"].(string)
	if b := snap["bytes"].(float64); b < 32<<20 || b > 256<<20 {
		t.Errorf("snapshot of 32 MiB of files in a 4 GiB workspace takes %v bytes; want about the data", b)
	}
	made := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, c, "sandbox_create", map[string]any{"snapshot": snapID})))["sandbox_id"].(string)
	if got := sum(made); got != want {
		t.Errorf("data.bin in the sandbox made from the snapshot: %s, want %s", got, want)
	}
	forks := structuredAs[map[string]any](t, mustOK(t, "sandbox_fork", call(t, c, "sandbox_fork", map[string]any{"sandbox_id": src, "count": 2})))["forks"].([]any)
	for _, f := range forks {
		id, _ := f.(map[string]any)["sandbox_id"].(string)
		if id == "" || sum(id) != want {
			t.Errorf("fork %v: want data.bin with the source's bytes", f)
		}
	}

	// A crash after the copy, before the record was marked ready; and a
	// crash in the middle of a fork, whose own snapshot was left.
	forkSnap := structuredAs[map[string]any](t, mustOK(t, "sandbox_snapshot", call(t, c, "sandbox_snapshot", map[string]any{"sandbox_id": src})))["snapshot_id"].(string)
	editSnapshotRecord(t, tg, snapID, "ready", false)
	editSnapshotRecord(t, tg, forkSnap, "for_fork", true)
	tg.crash()
	tg2 := restart(t, tg)
	for _, id := range []string{snapID, forkSnap} {
		if _, err := os.Stat(filepath.Join(tg.VarDir, "workspaces", "_snapshots", id)); !os.IsNotExist(err) {
			t.Errorf("snapshot %s's copy after the restart: %v; want it deleted", id, err)
		}
		if _, err := os.Stat(filepath.Join(tg.VarDir, "snapshots", id+".json")); !os.IsNotExist(err) {
			t.Errorf("snapshot %s's record after the restart: %v; want it deleted", id, err)
		}
	}
	c2 := modernClient(t, tg2.URL)
	cur = c2
	if l := structuredAs[map[string]any](t, mustOK(t, "snapshot_list", call(t, c2, "snapshot_list", nil)))["snapshots"].([]any); len(l) != 0 {
		t.Errorf("snapshot_list after the rollback: %v", l)
	}
	if got := sum(made); got != want {
		t.Errorf("the sandbox made from the rolled-back snapshot after the restart: %s, want its files kept", got)
	}
}

// editSnapshotRecord sets field key of snapshot id's record, as a crash
// would have left it.
func editSnapshotRecord(t *testing.T, tg *testGateway, id, key string, v bool) {
	t.Helper()
	record := filepath.Join(tg.VarDir, "snapshots", id+".json")
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	r[key] = v
	data, _ = json.Marshal(r)
	if err := os.WriteFile(record, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
