package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Conformance runs the behaviour every sandbox.Provider must show against
// providers made by newProvider, creating sandboxes from image. Subtests
// run in parallel and each calls newProvider; the provider it returns must
// be cleaned up by newProvider's own t.Cleanup. Owners and sessions are
// random, so the suite tolerates other sandboxes in the same provider.
func Conformance(t *testing.T, newProvider func(t *testing.T) sandbox.Provider, image string) {
	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		testLifecycle(t, newProvider(t), image)
	})
	t.Run("DistinctIDs", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		a, b := create(t, p, spec(image)), create(t, p, spec(image))
		if a.ID() == b.ID() {
			t.Fatalf("two sandboxes share id %s", a.ID())
		}
		dial(t, a)
		dial(t, b)
	})
	t.Run("SpecID", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		s := spec(image)
		s.ID = "conformance-" + randomHex(8)
		if sb := create(t, p, s); sb.ID() != s.ID {
			t.Fatalf("ID() = %q, want the spec's %q", sb.ID(), s.ID)
		}
	})
	t.Run("Destroy", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		sb := create(t, p, spec(image))
		if err := sb.Destroy(t.Context()); err != nil {
			t.Fatalf("Destroy: %v", err)
		}
		if _, err := p.Get(t.Context(), sb.ID()); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Get after Destroy: err = %v, want ErrNotFound", err)
		}
		if conn, err := sb.Dial(t.Context()); err == nil {
			conn.Close()
			t.Errorf("Dial after Destroy succeeded")
		}
	})
	t.Run("MissingImage", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		s := spec("sandgate/conformance-missing:" + randomHex(8))
		sb, err := p.Create(t.Context(), s)
		if err == nil {
			sb.Destroy(context.WithoutCancel(t.Context()))
		}
		if !errors.Is(err, sandbox.ErrImageMissing) {
			t.Fatalf("Create with a missing image: err = %v, want ErrImageMissing", err)
		}
		assertNone(t, p, sandbox.Filter{Owner: s.Owner})
	})
	t.Run("MissingID", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		id := randomHex(16)
		if _, err := p.Get(t.Context(), id); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Get(missing): err = %v, want ErrNotFound", err)
		}
		if err := p.Remove(t.Context(), id); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Remove(missing): err = %v, want ErrNotFound", err)
		}
	})
	t.Run("CancelledCreateLeavesNothing", func(t *testing.T) {
		t.Parallel()
		testCancelledCreate(t, newProvider(t), image)
	})
	t.Run("RecreateKeepsWorkspace", func(t *testing.T) {
		t.Parallel()
		testRecreate(t, newProvider(t), image)
	})
	t.Run("PauseKeepsWorkspace", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		pz, ok := p.(sandbox.Pauser)
		if !ok {
			t.Skipf("%T cannot pause a sandbox (no sandbox.Pauser)", p)
		}
		testPause(t, p, pz, image)
	})
	t.Run("PauseKeepsMemory", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		mp, ok := p.(sandbox.MemoryPauser)
		if !ok {
			t.Skipf("%T cannot pause a sandbox with its memory (no sandbox.MemoryPauser)", p)
		}
		if can, why := mp.KeepsMemory(); !can {
			if err := mp.PauseKeepingMemory(t.Context(), create(t, p, spec(image)).ID(), pauseReason); !errors.Is(err, sandbox.ErrCannotKeepMemory) {
				t.Errorf("PauseKeepingMemory where memory cannot be kept: err = %v, want ErrCannotKeepMemory", err)
			}
			t.Skipf("this provider's sandboxes cannot be paused with their memory: %s", why)
		}
		testMemoryPause(t, p, mp, image)
	})
	t.Run("SnapshotKeepsMemory", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		ms, ok := p.(sandbox.MemorySnapshotter)
		if !ok {
			t.Skipf("%T cannot snapshot a sandbox with its memory (no sandbox.MemorySnapshotter)", p)
		}
		testMemorySnapshot(t, p, ms, image)
	})
	t.Run("SnapshotCopiesWorkspace", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		sn, ok := p.(sandbox.Snapshotter)
		if !ok {
			t.Skipf("%T cannot snapshot a sandbox (no sandbox.Snapshotter)", p)
		}
		testSnapshot(t, p, sn, image)
	})
	t.Run("Recorder", func(t *testing.T) {
		t.Parallel()
		p := newProvider(t)
		r, ok := p.(sandbox.Recorder)
		if !ok {
			t.Skipf("%T records nothing after creation (no sandbox.Recorder)", p)
		}
		testRecorder(t, p, r, image)
	})
}

// testRecorder checks that what a Recorder records is what List reports,
// to any gateway replica, and that a removed sandbox has no record.
func testRecorder(t *testing.T, p sandbox.Provider, r sandbox.Recorder, image string) {
	ctx := t.Context()
	s := spec(image)
	sb := create(t, p, s)
	id := sb.ID()
	record := func() sandbox.Info {
		t.Helper()
		infos, err := p.List(ctx, sandbox.Filter{ID: id})
		if err != nil || len(infos) != 1 {
			t.Fatalf("List(ID %s) = %+v, %v; want the one sandbox", id, infos, err)
		}
		return infos[0]
	}
	if got := record(); !got.LastUsed.IsZero() || !slices.Equal(got.Network, s.Network) || !got.Deadline.IsZero() {
		t.Fatalf("a new sandbox's record: last used %v, network %v, deadline %v; want never, %v, none", got.LastUsed, got.Network, got.Deadline, s.Network)
	}
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	if err := r.Touch(ctx, id, at); err != nil {
		t.Fatalf("Touch: %v", err)
	}
	narrowed := []string{"example.com:443"}
	if err := r.SetNetwork(ctx, id, narrowed); err != nil {
		t.Fatalf("SetNetwork: %v", err)
	}
	if got := record(); !got.LastUsed.Equal(at) || !slices.Equal(got.Network, narrowed) || got.Owner != s.Owner {
		t.Errorf("record after Touch and SetNetwork: last used %v, network %v, owner %q; want %v, %v, %q",
			got.LastUsed, got.Network, got.Owner, at, narrowed, s.Owner)
	}
	end := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Millisecond)
	if err := r.SetDeadline(ctx, id, end); err != nil {
		t.Fatalf("SetDeadline: %v", err)
	}
	if got := record(); !got.Deadline.Equal(end) || !got.LastUsed.Equal(at) {
		t.Errorf("record after SetDeadline: deadline %v, last used %v; want %v, %v", got.Deadline, got.LastUsed, end, at)
	}
	s.ID = id
	if _, err := p.Recreate(ctx, s); err != nil {
		t.Fatalf("Recreate: %v", err)
	}
	if got := record(); !got.Deadline.Equal(end) || !sameCreation(got, s) {
		t.Errorf("record after Recreate: deadline %v, template %q, metadata %v; want %v, %q, %v", got.Deadline, got.Template, got.Metadata, end, s.Template, s.Metadata)
	}
	if err := r.SetDeadline(ctx, id, time.Time{}); err != nil {
		t.Fatalf("SetDeadline(none): %v", err)
	}
	if got := record(); !got.Deadline.IsZero() {
		t.Errorf("deadline after SetDeadline(none) = %v, want none", got.Deadline)
	}
	if err := r.SetNetwork(ctx, id, nil); err != nil {
		t.Fatalf("SetNetwork(none): %v", err)
	}
	if got := record(); len(got.Network) != 0 {
		t.Errorf("network after SetNetwork(none) = %v, want none", got.Network)
	}
	if err := p.Remove(ctx, id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := r.Touch(ctx, id, time.Now()); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Touch after Remove: err = %v, want ErrNotFound", err)
	}
	if err := r.SetNetwork(ctx, id, narrowed); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("SetNetwork after Remove: err = %v, want ErrNotFound", err)
	}
	if err := r.SetDeadline(ctx, id, end); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("SetDeadline after Remove: err = %v, want ErrNotFound", err)
	}
}

// testRecreate writes a file through the runner, recreates the sandbox
// and reads the file back through the new runner; after Remove, Recreate
// finds nothing.
//
// The path is relative, so it lands in the runner's own workspace:
// /workspace in a container, a temp dir for the in-process provider,
// whose runner runs on the host. "/workspace/kept.txt" there wrote the
// host's /workspace (creating it), which made every later test that
// reads the host's /workspace pass, and this check pass without reading
// the sandbox's workspace at all.
func testRecreate(t *testing.T, p sandbox.Provider, image string) {
	ctx := t.Context()
	s := spec(image)
	sb := create(t, p, s)
	call(t, sb, protocol.OpFileWrite, protocol.WriteRequest{Path: "kept.txt", Content: "kept"}, nil)
	s.ID = sb.ID()
	again, err := p.Recreate(ctx, s)
	if err != nil {
		t.Fatalf("Recreate(%s): %v", s.ID, err)
	}
	if again.ID() != sb.ID() || again.Info().Owner != s.Owner || again.Info().Client != s.Client || !sameCreation(again.Info(), s) {
		t.Errorf("Recreate gave %+v, want sandbox %s of owner %s, client %s", again.Info(), sb.ID(), s.Owner, s.Client)
	}
	if infos, err := p.List(ctx, sandbox.Filter{Owner: s.Owner, Client: s.Client}); err != nil || len(infos) != 1 || infos[0].ID != sb.ID() || !sameCreation(infos[0], s) {
		t.Errorf("List(owner, client) after Recreate = %+v, %v; want [%s] with template %q, metadata %v", infos, err, sb.ID(), s.Template, s.Metadata)
	}
	var got protocol.ReadResult
	call(t, again, protocol.OpFileRead, protocol.ReadRequest{Path: "kept.txt"}, &got)
	if again.Info().WorkspaceDurable && got.Content != "kept" {
		t.Errorf("after Recreate kept.txt = %q, want the file written before", got.Content)
	}
	if err := p.Remove(ctx, sb.ID()); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := p.Recreate(ctx, s); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Recreate after Remove: err = %v, want ErrNotFound", err)
	}
}

// pauseReason is the reason the conformance tests pause with.
const pauseReason = "conformance pause"

// testPause pauses a sandbox and resumes it: while paused it is listed
// as paused with its record, not found by Get and not answering; resumed,
// it has the same id, record and workspace files. Pausing twice, and
// resuming a running sandbox, change nothing; a paused sandbox is
// removed like any other.
func testPause(t *testing.T, p sandbox.Provider, pz sandbox.Pauser, image string) {
	ctx := t.Context()
	s := spec(image)
	sb := create(t, p, s)
	id := sb.ID()
	call(t, sb, protocol.OpFileWrite, protocol.WriteRequest{Path: "kept.txt", Content: "kept"}, nil)
	before := time.Now().Add(-time.Second) // file times may be truncated
	if err := pz.Pause(ctx, id, pauseReason); err != nil {
		t.Fatalf("Pause(%s): %v", id, err)
	}
	after := time.Now().Add(time.Second)
	if err := pz.Pause(ctx, id, "again"); err != nil {
		t.Errorf("Pause of a paused sandbox: %v, want nil", err)
	}
	if infos, err := p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].State != sandbox.StatePaused ||
		infos[0].Owner != s.Owner || !sameCreation(infos[0], s) {
		t.Errorf("List(%s) while paused = %+v, %v; want it paused, owner %s, template %q, metadata %v", id, infos, err, s.Owner, s.Template, s.Metadata)
	} else if at := infos[0].PausedAt; at.Before(before) || at.After(after) || infos[0].WorkspaceDurable && infos[0].DiskBytes <= 0 {
		t.Errorf("List(%s) while paused: paused at %v (paused between %v and %v), %d bytes on disk; want the time and the workspace's bytes", id, at, before, after, infos[0].DiskBytes)
	} else if infos[0].PausedFor != pauseReason {
		t.Errorf("List(%s) while paused: paused for %q, want the first pause's reason %q", id, infos[0].PausedFor, pauseReason)
	}
	if _, err := p.Get(ctx, id); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get of a paused sandbox: err = %v, want ErrNotFound", err)
	}
	if c, err := protocol.Dial(ctx, sb.Dial); err == nil {
		c.Close()
		t.Error("the runner of a paused sandbox still answers")
	}
	again, err := pz.Resume(ctx, id)
	if err != nil {
		t.Fatalf("Resume(%s): %v", id, err)
	}
	if again.ID() != id || again.Info().Owner != s.Owner || !sameCreation(again.Info(), s) {
		t.Errorf("Resume gave %+v, want sandbox %s of owner %s", again.Info(), id, s.Owner)
	}
	var got protocol.ReadResult
	call(t, again, protocol.OpFileRead, protocol.ReadRequest{Path: "kept.txt"}, &got)
	if again.Info().WorkspaceDurable && got.Content != "kept" {
		t.Errorf("after Resume kept.txt = %q, want the file written before the pause", got.Content)
	}
	if infos, err := p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].State == sandbox.StatePaused ||
		infos[0].ResumedAt.Before(before) || !infos[0].PausedAt.IsZero() || infos[0].PausedFor != "" {
		t.Errorf("List(%s) after Resume = %+v, %v; want it running, resumed after %v", id, infos, err, before)
	}
	if sb, err := pz.Resume(ctx, id); err != nil || sb.ID() != id {
		t.Errorf("Resume of a running sandbox: %v, want the sandbox", err)
	}
	if err := pz.Pause(ctx, id, "a reason\nwith a newline"); err != nil {
		t.Fatalf("Pause(%s) again: %v", id, err)
	}
	if infos, err := p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].PausedFor != "" {
		t.Errorf("List(%s) paused with a reason that is not printable: %+v, %v; want no reason kept", id, infos, err)
	}
	if err := p.Remove(ctx, id); err != nil {
		t.Fatalf("Remove of a paused sandbox: %v", err)
	}
	assertNone(t, p, sandbox.Filter{ID: id})
	if _, err := pz.Resume(ctx, id); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Resume after Remove: err = %v, want ErrNotFound", err)
	}
	if err := pz.Pause(ctx, id, pauseReason); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Pause after Remove: err = %v, want ErrNotFound", err)
	}
}

// testSnapshot snapshots a running sandbox's workspace: a sandbox
// created from the snapshot starts with the files written before it and
// not those written after, the original runs on, and a deleted snapshot
// is gone.
func testSnapshot(t *testing.T, p sandbox.Provider, sn sandbox.Snapshotter, image string) {
	ctx := t.Context()
	sb := create(t, p, spec(image))
	call(t, sb, protocol.OpFileWrite, protocol.WriteRequest{Path: "before.txt", Content: "before"}, nil)
	snap := "snap" + randomHex(8)
	n, err := sn.Snapshot(ctx, sb.ID(), snap)
	if err != nil {
		t.Fatalf("Snapshot(%s): %v", sb.ID(), err)
	}
	t.Cleanup(func() { _ = sn.DeleteSnapshot(context.Background(), snap) })
	if n <= 0 {
		t.Errorf("Snapshot reports %d bytes on disk", n)
	}
	call(t, sb, protocol.OpFileWrite, protocol.WriteRequest{Path: "after.txt", Content: "after"}, nil)
	s := spec(image)
	s.Snapshot = snap
	copied := create(t, p, s)
	var got protocol.ReadResult
	call(t, copied, protocol.OpFileRead, protocol.ReadRequest{Path: "before.txt"}, &got)
	if got.Content != "before" {
		t.Errorf("before.txt in the sandbox made from the snapshot = %q, want the file written before it", got.Content)
	}
	got = protocol.ReadResult{}
	call(t, copied, protocol.OpFileRead, protocol.ReadRequest{Path: "after.txt"}, &got)
	if got.Content != "" {
		t.Errorf("after.txt, written after the snapshot, is in the copy: %q", got.Content)
	}
	if err := sn.DeleteSnapshot(ctx, snap); err != nil {
		t.Fatalf("DeleteSnapshot: %v", err)
	}
	if err := sn.DeleteSnapshot(ctx, snap); !errors.Is(err, sandbox.ErrNoSnapshot) {
		t.Errorf("DeleteSnapshot of a deleted snapshot: %v, want ErrNoSnapshot", err)
	}
	if _, err := p.Create(ctx, s); !errors.Is(err, sandbox.ErrNoSnapshot) {
		t.Errorf("Create from a deleted snapshot: %v, want ErrNoSnapshot", err)
	}
}

// call makes one runner request on a new connection to sb.
func call(t *testing.T, sb sandbox.Sandbox, op protocol.Op, params, result any) {
	t.Helper()
	c, err := protocol.Dial(t.Context(), sb.Dial)
	if err != nil {
		t.Fatalf("connect to the runner of %s: %v", sb.ID(), err)
	}
	defer c.Close()
	if err := c.Call(t.Context(), op, params, result); err != nil && !(op == protocol.OpFileRead && protocol.CodeOf(err) == protocol.CodeNotFound) {
		t.Fatalf("%s on %s: %v", op, sb.ID(), err)
	}
}

// testLifecycle walks one sandbox through create, get, list, dial, remove.
func testLifecycle(t *testing.T, p sandbox.Provider, image string) {
	ctx := t.Context()
	s := spec(image)
	before := time.Now()
	sb := create(t, p, s)
	id := sb.ID()
	if len(id) < 22 { // 128 bits are at least 22 characters in any common encoding
		t.Errorf("ID() = %q: too short for 128 random bits", id)
	}
	info := sb.Info()
	if info.ID != id || info.Owner != s.Owner || info.Session != s.Session || info.Client != s.Client || info.Image != image {
		t.Errorf("Info() = %+v, want id %s, owner %s, session %s, client %s, image %s", info, id, s.Owner, s.Session, s.Client, image)
	}
	if !info.ExpiresAt.Equal(s.ExpiresAt) {
		t.Errorf("Info().ExpiresAt = %v, want %v", info.ExpiresAt, s.ExpiresAt)
	}
	if !sameCreation(info, s) {
		t.Errorf("Info() template %q, metadata %v; want %q, %v", info.Template, info.Metadata, s.Template, s.Metadata)
	}
	if info.CreatedAt.Before(before.Add(-time.Second)) || info.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("Info().CreatedAt = %v, want about %v", info.CreatedAt, before)
	}

	got, err := p.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	if gi := got.Info(); gi.ID != id || gi.Owner != s.Owner || gi.Session != s.Session || gi.Client != s.Client || !gi.ExpiresAt.Equal(s.ExpiresAt) ||
		gi.Tenant != s.Tenant || !slices.Equal(gi.Network, s.Network) || gi.Pool != s.Pool || !sameCreation(gi, s) {
		t.Errorf("Get(%s).Info() = %+v, want the created sandbox %+v", id, gi, info)
	}
	dial(t, got)
	dial(t, sb)

	for _, f := range []sandbox.Filter{{Owner: s.Owner}, {Session: s.Session}, {Owner: s.Owner, Session: s.Session},
		{Tenant: s.Tenant}, {ID: id}, {ID: id, Tenant: s.Tenant}, {Client: s.Client}, {Owner: s.Owner, Client: s.Client}} {
		if ids := listIDs(t, p, f); !slices.Equal(ids, []string{id}) {
			t.Errorf("List(%+v) = %v, want [%s]", f, ids, id)
		}
	}
	if infos, err := p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].Client != s.Client || !sameCreation(infos[0], s) {
		t.Errorf("List(ID %s) = %+v, %v; want the sandbox of client %s, template %q, metadata %v", id, infos, err, s.Client, s.Template, s.Metadata)
	}
	assertNone(t, p, sandbox.Filter{Owner: s.Owner, Client: "other-" + s.Client})
	assertNone(t, p, sandbox.Filter{Owner: "other-" + s.Owner})
	assertNone(t, p, sandbox.Filter{Owner: s.Owner, Session: "other-" + s.Session})
	assertNone(t, p, sandbox.Filter{Tenant: "other-" + s.Tenant})
	assertNone(t, p, sandbox.Filter{ID: id, Tenant: "other-" + s.Tenant})
	if ids := listIDs(t, p, sandbox.Filter{}); !slices.Contains(ids, id) {
		t.Errorf("List({}) = %v, want it to contain %s", ids, id)
	}

	if err := p.Remove(ctx, id); err != nil {
		t.Fatalf("Remove(%s): %v", id, err)
	}
	if _, err := p.Get(ctx, id); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get after Remove: err = %v, want ErrNotFound", err)
	}
	if err := p.Remove(ctx, id); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("second Remove: err = %v, want ErrNotFound", err)
	}
	assertNone(t, p, sandbox.Filter{Owner: s.Owner})
}

// testCancelledCreate cancels a Create part-way and checks that it left
// nothing behind, whatever step it was at.
func testCancelledCreate(t *testing.T, p sandbox.Provider, image string) {
	s := spec(image)
	for _, after := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(t.Context(), after)
		sb, err := p.Create(ctx, s)
		cancel()
		if err == nil { // faster than the deadline: fine, but clean up
			if err := sb.Destroy(t.Context()); err != nil {
				t.Fatalf("Destroy: %v", err)
			}
		}
		assertNone(t, p, sandbox.Filter{Owner: s.Owner})
	}
}

// spec returns a Spec with a fresh random owner, session and client.
func spec(image string) sandbox.Spec {
	return sandbox.Spec{
		Image:     image,
		Owner:     "owner-" + randomHex(8),
		Session:   "session-" + randomHex(8),
		Client:    "client-" + randomHex(8),
		Tenant:    "tenant-" + randomHex(4),
		Network:   []string{"example.com:443", "*.example.org"},
		ExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Second),
		Pool:      "pool-" + randomHex(4),
		Template:  "template-" + randomHex(4),
		Lifecycle: sandbox.Lifecycle{PauseOnTimeout: true, AutoResume: true},
		// Characters a label or annotation value, or a comma-joined list,
		// could mangle.
		Metadata: map[string]string{"user": "ada", "k/with spaces.é": `v=1, "quoted"; ünïcode`},
	}
}

// sameCreation reports whether info keeps s's template, metadata and
// lifecycle.
func sameCreation(info sandbox.Info, s sandbox.Spec) bool {
	return info.Template == s.Template && maps.Equal(info.Metadata, s.Metadata) && info.Lifecycle == s.Lifecycle
}

// create makes a sandbox and removes it when t ends (if still there).
func create(t *testing.T, p sandbox.Provider, s sandbox.Spec) sandbox.Sandbox {
	t.Helper()
	sb, err := p.Create(t.Context(), s)
	if err != nil {
		t.Fatalf("Create(%+v): %v", s, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Remove(ctx, sb.ID()); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("cleanup: Remove(%s): %v", sb.ID(), err)
		}
	})
	return sb
}

// dial checks that the runner of sb accepts a connection.
func dial(t *testing.T, sb sandbox.Sandbox) {
	t.Helper()
	conn, err := sb.Dial(t.Context())
	if err != nil {
		t.Fatalf("Dial(%s): %v", sb.ID(), err)
	}
	conn.Close()
}

// listIDs returns the ids List reports for f.
func listIDs(t *testing.T, p sandbox.Provider, f sandbox.Filter) []string {
	t.Helper()
	infos, err := p.List(t.Context(), f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	ids := make([]string, len(infos))
	for i, in := range infos {
		ids[i] = in.ID
	}
	return ids
}

// assertNone fails t if List reports any sandbox for f.
func assertNone(t *testing.T, p sandbox.Provider, f sandbox.Filter) {
	t.Helper()
	if ids := listIDs(t, p, f); len(ids) != 0 {
		t.Errorf("List(%+v) = %v, want none", f, ids)
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
