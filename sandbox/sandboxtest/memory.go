package sandboxtest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// testMemoryPause pauses a sandbox with its memory and resumes it: a
// background process is the same process and carries on counting where
// it was, a file in the sandbox's /tmp (memory, not the workspace) is
// still there, and the interpreter still has a variable set before the
// pause. The sandbox is listed as paused with its memory kept. A second
// pause drops the memory (DropMemory) and the resume starts afresh with
// the workspace's files only.
func testMemoryPause(t *testing.T, p sandbox.Provider, mp sandbox.MemoryPauser, image string) {
	ctx := t.Context()
	sb := create(t, p, spec(image))
	id := sb.ID()
	state := rememberState(t, sb)

	if err := mp.PauseKeepingMemory(ctx, id, pauseReason); err != nil {
		t.Fatalf("PauseKeepingMemory(%s): %v", id, err)
	}
	infos, err := p.List(ctx, sandbox.Filter{ID: id})
	if err != nil || len(infos) != 1 || infos[0].State != sandbox.StatePaused || !infos[0].MemoryKept || infos[0].DiskBytes <= 0 {
		t.Fatalf("List(%s) paused with memory = %+v, %v; want paused, memory kept, its bytes on disk", id, infos, err)
	}
	if err := mp.PauseKeepingMemory(ctx, id, pauseReason); err != nil {
		t.Errorf("PauseKeepingMemory of a paused sandbox: %v, want nil", err)
	}
	again, err := mp.Resume(ctx, id)
	if err != nil {
		t.Fatalf("Resume(%s): %v", id, err)
	}
	state.carriesOn(t, again, "after a memory resume")
	if infos, err := p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].MemoryKept || infos[0].State == sandbox.StatePaused {
		t.Errorf("List(%s) after the resume = %+v, %v; want it running with no checkpoint left", id, infos, err)
	}

	// Memory dropped: the resume starts afresh, with the files.
	if err := mp.PauseKeepingMemory(ctx, id, pauseReason); err != nil {
		t.Fatalf("PauseKeepingMemory(%s) again: %v", id, err)
	}
	if err := mp.DropMemory(ctx, id); err != nil {
		t.Fatalf("DropMemory(%s): %v", id, err)
	}
	if infos, err := p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].MemoryKept || infos[0].State != sandbox.StatePaused {
		t.Errorf("List(%s) after DropMemory = %+v, %v; want paused without memory", id, infos, err)
	}
	cold, err := mp.Resume(ctx, id)
	if err != nil {
		t.Fatalf("Resume(%s) without memory: %v", id, err)
	}
	var list protocol.ProcessList
	call(t, cold, protocol.OpProcessList, nil, &list)
	if hasRunning(list, state.proc) {
		t.Errorf("a resume without memory still has process %s", state.proc.ID)
	}
	var got protocol.ReadResult
	call(t, cold, protocol.OpFileRead, protocol.ReadRequest{Path: "kept.txt"}, &got)
	if got.Content != "kept" {
		t.Errorf("after a resume without memory kept.txt = %q, want the file", got.Content)
	}
	if err := p.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := mp.PauseKeepingMemory(ctx, id, pauseReason); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("PauseKeepingMemory after Remove: err = %v, want ErrNotFound", err)
	}
}

// memoryState is what a sandbox holds in memory and on disk for the
// memory tests: a file, a background counter and an interpreter
// variable.
type memoryState struct {
	proc   protocol.ProcessInfo // the counter, writing /tmp/count
	before int                  // the count when it was remembered
}

// rememberState writes kept.txt in sb, starts the counter and sets the
// interpreter's kept = 41.
func rememberState(t *testing.T, sb sandbox.Sandbox) memoryState {
	t.Helper()
	call(t, sb, protocol.OpFileWrite, protocol.WriteRequest{Path: "kept.txt", Content: "kept"}, nil)
	var st memoryState
	call(t, sb, protocol.OpProcessStart, protocol.ExecRequest{
		Command: `n=0; while :; do n=$((n+1)); echo $n > /tmp/count; sleep 0.05; done`, Tag: "counter"}, &st.proc)
	var cell protocol.InterpResult
	call(t, sb, protocol.OpInterpRun, protocol.InterpRequest{Language: "python", Code: "kept = 41"}, &cell)
	if cell.Error != "" {
		t.Fatalf("interpreter: %s", cell.Error)
	}
	if st.before = countOf(t, sb); st.before == 0 {
		t.Fatal("the background counter wrote nothing")
	}
	return st
}

// carriesOn checks that sb (the same sandbox, or one made from its
// snapshot) has the remembered state: the counter is the same process
// and counts on from where it was, the interpreter has its variable, and
// kept.txt is there. where says which sandbox, for the errors.
func (st memoryState) carriesOn(t *testing.T, sb sandbox.Sandbox, where string) {
	t.Helper()
	var list protocol.ProcessList
	call(t, sb, protocol.OpProcessList, nil, &list)
	if !hasRunning(list, st.proc) {
		t.Errorf("%s the processes are %+v; want %s (pid %d) still running", where, list.Processes, st.proc.ID, st.proc.Pid)
	}
	if after := countOf(t, sb); after < st.before {
		t.Errorf("%s the counter is at %d, was at %d before: it started again", where, after, st.before)
	}
	var cell protocol.InterpResult
	call(t, sb, protocol.OpInterpRun, protocol.InterpRequest{Language: "python", Code: "kept + 1"}, &cell)
	if cell.Result != "42" || cell.Restarted {
		t.Errorf("%s `kept + 1` = %q (error %q, restarted %v); want 42 from the same interpreter", where, cell.Result, cell.Error, cell.Restarted)
	}
	var got protocol.ReadResult
	call(t, sb, protocol.OpFileRead, protocol.ReadRequest{Path: "kept.txt"}, &got)
	if got.Content != "kept" {
		t.Errorf("%s kept.txt = %q, want the file", where, got.Content)
	}
}

// countOf reads the counter the background process keeps in /tmp, after
// a moment, so that it has counted since the last read.
func countOf(t *testing.T, sb sandbox.Sandbox) int {
	t.Helper()
	time.Sleep(200 * time.Millisecond)
	c, err := protocol.Dial(t.Context(), sb.Dial)
	if err != nil {
		t.Fatalf("connect to the runner of %s: %v", sb.ID(), err)
	}
	defer c.Close()
	var out strings.Builder
	_, err = c.Stream(t.Context(), protocol.OpExec, protocol.ExecRequest{Command: "cat /tmp/count"}, func(ev protocol.Event) {
		if ev.Type == protocol.EventStdout {
			out.Write(ev.Data)
		}
	})
	if err != nil {
		t.Fatalf("read the counter: %v", err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out.String()))
	return n
}

func hasRunning(list protocol.ProcessList, proc protocol.ProcessInfo) bool {
	for _, p := range list.Processes {
		if p.ID == proc.ID && p.Pid == proc.Pid && p.Running {
			return true
		}
	}
	return false
}

// testMemorySnapshot snapshots a running sandbox with its memory where
// the provider can (elsewhere it must say ErrCannotKeepMemory and leave
// the sandbox running): the sandbox runs on with its processes, and a
// sandbox made from the snapshot starts with them too: the background
// counter is the same process (its pid too) and counts on from where the
// snapshot was, the interpreter has its variable, and the files are
// there. The two are independent afterwards.
func testMemorySnapshot(t *testing.T, p sandbox.Provider, ms sandbox.MemorySnapshotter, image string) {
	ctx := t.Context()
	sb := create(t, p, spec(image))
	id := sb.ID()
	snap := "snap" + randomHex(8)
	if mp, ok := p.(sandbox.MemoryPauser); !ok || !keepsMemory(mp) {
		if _, err := ms.SnapshotWithMemory(ctx, id, snap); !errors.Is(err, sandbox.ErrCannotKeepMemory) {
			t.Fatalf("SnapshotWithMemory where memory cannot be kept: %v, want ErrCannotKeepMemory", err)
		}
		call(t, sb, protocol.OpFileWrite, protocol.WriteRequest{Path: "still.txt", Content: "running"}, nil)
		return
	}
	state := rememberState(t, sb)

	n, err := ms.SnapshotWithMemory(ctx, id, snap)
	if err != nil {
		t.Fatalf("SnapshotWithMemory(%s): %v", id, err)
	}
	t.Cleanup(func() { _ = ms.DeleteSnapshot(context.Background(), snap) })
	if n <= 0 {
		t.Errorf("SnapshotWithMemory took %d bytes, want its workspace's and memory's", n)
	}
	running, err := p.Get(ctx, id)
	if err != nil {
		t.Fatalf("the sandbox after its memory snapshot: %v", err)
	}
	state.carriesOn(t, running, "in the source after its memory snapshot")

	s := spec(image)
	s.Snapshot = snap
	fork := create(t, p, s)
	if !fork.Info().MemoryKept {
		t.Errorf("a sandbox made from a memory snapshot: %+v, want MemoryKept", fork.Info())
	}
	state.carriesOn(t, fork, "in a sandbox made from a memory snapshot")
	call(t, fork, protocol.OpFileWrite, protocol.WriteRequest{Path: "fork-only.txt", Content: "x"}, nil)
	var got protocol.ReadResult
	call(t, running, protocol.OpFileRead, protocol.ReadRequest{Path: "fork-only.txt"}, &got) // not found: empty
	if got.Content != "" {
		t.Error("a file written in the copy shows in the original")
	}
}

// keepsMemory reports whether mp's sandboxes can keep their memory here.
func keepsMemory(mp sandbox.MemoryPauser) bool {
	ok, _ := mp.KeepsMemory()
	return ok
}
