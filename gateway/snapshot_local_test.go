package gateway_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

// TestLocalSnapshotAndFork: sandbox_snapshot copies a sandbox's files as
// they are; sandbox_create {snapshot} starts a sandbox with them (later
// writes to the original do not reach it); snapshot_list and
// snapshot_delete keep a tenant's own; sandbox_fork makes count
// independent sandboxes with the files; another tenant can neither see,
// use nor delete the snapshot; bad names and counts are refused with
// nothing changed; each snapshot is audited.
func TestLocalSnapshotAndFork(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	const scopes = "sandbox:exec sandbox:files:read sandbox:files:write"
	owner := modernBearerClient(t, og.URL, clientToken(t, og, "owner", scopes))
	other := modernBearerClient(t, og.URL, clientToken(t, og, "other", scopes))
	src := newSandboxID(t, owner)
	write(t, owner, src, "f.txt", "v1", "")

	for _, bad := range []string{"../up", "a/b", "x y", strings.Repeat("n", 65)} {
		res := call(t, owner, "sandbox_snapshot", map[string]any{"sandbox_id": src, "name": bad})
		if !res.IsError || !strings.Contains(text(res), "snapshot name") {
			t.Errorf("snapshot named %q: %q; want a refusal naming the rule", bad, text(res))
		}
	}
	snap := structuredAs[map[string]any](t, mustOK(t, "sandbox_snapshot", call(t, owner, "sandbox_snapshot", map[string]any{"sandbox_id": src, "name": "v1"})))
	snapID, _ := snap["snapshot_id"].(string)
	if snapID == "" || snap["name"] != "v1" || snap["bytes"].(float64) <= 0 {
		t.Fatalf("sandbox_snapshot answered %v", snap)
	}
	write(t, owner, src, "f.txt", "v2", "")

	made := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, owner, "sandbox_create", map[string]any{"snapshot": snapID})))["sandbox_id"].(string)
	if got := text(mustOK(t, "read_file", call(t, owner, "read_file", map[string]any{"sandbox_id": made, "path": "f.txt"}))); got != "v1" {
		t.Fatalf("f.txt in the sandbox made from the snapshot = %q, want v1", got)
	}
	list := structuredAs[map[string]any](t, mustOK(t, "snapshot_list", call(t, owner, "snapshot_list", nil)))["snapshots"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["snapshot_id"] != snapID {
		t.Fatalf("snapshot_list = %v, want the one snapshot", list)
	}

	// Another tenant: not listed, not usable, not deletable.
	if l := structuredAs[map[string]any](t, mustOK(t, "snapshot_list", call(t, other, "snapshot_list", nil)))["snapshots"].([]any); len(l) != 0 {
		t.Errorf("another tenant lists %v", l)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"sandbox_create", map[string]any{"snapshot": snapID}},
		{"snapshot_delete", map[string]any{"snapshot_id": snapID}},
		{"sandbox_snapshot", map[string]any{"sandbox_id": src}},
		{"sandbox_fork", map[string]any{"sandbox_id": src, "count": 1}},
	} {
		if res := call(t, other, tc.tool, tc.args); !res.IsError || !(strings.Contains(text(res), "not found") || strings.Contains(text(res), "no such snapshot")) {
			t.Errorf("%s by another tenant: %q; want not found", tc.tool, text(res))
		}
	}

	for _, n := range []int{0, 101} {
		if res := call(t, owner, "sandbox_fork", map[string]any{"sandbox_id": src, "count": n}); !res.IsError || !strings.Contains(text(res), "1 to 100") {
			t.Errorf("sandbox_fork count %d: %q; want a refusal", n, text(res))
		}
	}
	fork := structuredAs[map[string]any](t, mustOK(t, "sandbox_fork", call(t, owner, "sandbox_fork", map[string]any{"sandbox_id": src, "count": 2})))
	forks := fork["forks"].([]any)
	if len(forks) != 2 {
		t.Fatalf("sandbox_fork count 2 answered %v", fork)
	}
	var ids []string
	for _, f := range forks {
		id, _ := f.(map[string]any)["sandbox_id"].(string)
		if id == "" {
			t.Fatalf("a fork failed: %v", f)
		}
		ids = append(ids, id)
		if got := text(mustOK(t, "read_file", call(t, owner, "read_file", map[string]any{"sandbox_id": id, "path": "f.txt"}))); got != "v2" {
			t.Errorf("f.txt in fork %s = %q, want v2 (the files when it was forked)", id, got)
		}
	}
	write(t, owner, ids[0], "f.txt", "changed", "")
	if got := text(mustOK(t, "read_file", call(t, owner, "read_file", map[string]any{"sandbox_id": ids[1], "path": "f.txt"}))); got != "v2" {
		t.Errorf("a write to one fork reached another: %q", got)
	}
	if l := structuredAs[map[string]any](t, mustOK(t, "snapshot_list", call(t, owner, "snapshot_list", nil)))["snapshots"].([]any); len(l) != 1 {
		t.Errorf("after the fork snapshot_list = %v; want only the snapshot taken by hand (the fork's own is deleted)", l)
	}

	mustOK(t, "snapshot_delete", call(t, owner, "snapshot_delete", map[string]any{"snapshot_id": snapID}))
	if res := call(t, owner, "sandbox_create", map[string]any{"snapshot": snapID}); !res.IsError || !strings.Contains(text(res), "no such snapshot") {
		t.Errorf("sandbox_create from a deleted snapshot: %q", text(res))
	}
	if got := text(mustOK(t, "read_file", call(t, owner, "read_file", map[string]any{"sandbox_id": made, "path": "f.txt"}))); got != "v1" {
		t.Errorf("the sandbox made from the deleted snapshot lost its files: %q", got)
	}
	var created, deleted int
	for _, e := range auditRecords(t, og.AuditPath) {
		switch e.Kind {
		case audit.KindSnapshotCreate:
			created++
		case audit.KindSnapshotDelete:
			deleted++
		}
	}
	if created != 2 || deleted != 2 {
		t.Errorf("audit: %d snapshot.create and %d snapshot.delete records; want 2 and 2 (one each by hand, one each for the fork)", created, deleted)
	}
}
