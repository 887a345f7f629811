package e2b_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
)

func code(err error) connect.Code {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	return 0
}

func TestFilesystem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	dir := filepath.Join(e.workspace, "a", "b")

	mk, err := e.fs.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: dir}))
	if err != nil {
		t.Fatal(err)
	}
	if got := mk.Msg.GetEntry(); got.GetType() != filesystem.FileType_FILE_TYPE_DIRECTORY || got.GetPath() != dir {
		t.Errorf("MakeDir entry %v, want the directory %s", got, dir)
	}
	if _, err := e.fs.MakeDir(ctx, connect.NewRequest(&filesystem.MakeDirRequest{Path: dir})); code(err) != connect.CodeAlreadyExists {
		t.Errorf("MakeDir of an existing directory: %v, want AlreadyExists", err)
	}

	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	st, err := e.fs.Stat(ctx, connect.NewRequest(&filesystem.StatRequest{Path: file}))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Msg.GetEntry(); got.GetName() != "f.txt" || got.GetType() != filesystem.FileType_FILE_TYPE_FILE || got.GetSize() != 5 ||
		got.GetMode() != 0o644 || got.GetPermissions() != "-rw-r--r--" || got.GetModifiedTime() == nil {
		t.Errorf("Stat %v, want f.txt, a file of 5 bytes, mode 0644 -rw-r--r--, with its time", got)
	}

	names := func(depth uint32) []string {
		t.Helper()
		l, err := e.fs.ListDir(ctx, connect.NewRequest(&filesystem.ListDirRequest{Path: filepath.Join(e.workspace, "a"), Depth: depth}))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, en := range l.Msg.GetEntries() {
			out = append(out, en.GetPath())
		}
		return out
	}
	if got, want := names(2), []string{dir, file}; !slices.Equal(got, want) {
		t.Errorf("ListDir depth 2: %v, want %v", got, want)
	}
	if got, want := names(0), []string{dir}; !slices.Equal(got, want) {
		t.Errorf("ListDir depth 0 (as 1): %v, want %v", got, want)
	}

	moved := filepath.Join(e.workspace, "a", "g.txt")
	mv, err := e.fs.Move(ctx, connect.NewRequest(&filesystem.MoveRequest{Source: file, Destination: moved}))
	if err != nil {
		t.Fatal(err)
	}
	if mv.Msg.GetEntry().GetPath() != moved {
		t.Errorf("Move entry %v, want %s", mv.Msg.GetEntry(), moved)
	}
	if _, err := e.fs.Remove(ctx, connect.NewRequest(&filesystem.RemoveRequest{Path: filepath.Join(e.workspace, "a")})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.Stat(ctx, connect.NewRequest(&filesystem.StatRequest{Path: moved})); code(err) != connect.CodeNotFound {
		t.Errorf("Stat after Remove: %v, want NotFound", err)
	}
}

func TestFilesystemNeedsScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sandbox:files:read")
	_, err := e.fs.MakeDir(guard(t), connect.NewRequest(&filesystem.MakeDirRequest{Path: filepath.Join(e.workspace, "x")}))
	if code(err) != connect.CodePermissionDenied {
		t.Errorf("MakeDir without the write scope: %v, want PermissionDenied", err)
	}
}

// TestWatchDir waits for each event by content, never by time. The
// runner reports every change, so a file removed right after it was
// created is seen twice, and a rename is a RENAME of the old name and a
// CREATE of the new, as envd's fsnotify reports it.
func TestWatchDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	s, err := e.fs.WatchDir(ctx, connect.NewRequest(&filesystem.WatchDirRequest{Path: e.workspace, IncludeEntry: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Receive() || s.Msg().GetStart() == nil {
		t.Fatalf("first event %v (%v), want start", s.Msg(), s.Err())
	}
	var got []string
	await := func(want ...string) {
		t.Helper()
		for !subsequence(want, got) && s.Receive() {
			if ev := s.Msg().GetFilesystem(); ev != nil {
				got = append(got, ev.GetType().String()+" "+ev.GetName())
			}
		}
		if !subsequence(want, got) {
			t.Fatalf("stream ended (%v) with events %q, want %q among them in order", s.Err(), got, want)
		}
	}
	path := filepath.Join(e.workspace, "new.txt")
	must(t, os.WriteFile(path, []byte("x"), 0o644))
	must(t, os.Remove(path))
	await("EVENT_TYPE_CREATE new.txt", "EVENT_TYPE_REMOVE new.txt")

	got = nil
	must(t, os.WriteFile(filepath.Join(e.workspace, "a"), nil, 0o644))
	must(t, os.Rename(filepath.Join(e.workspace, "a"), filepath.Join(e.workspace, "b")))
	await("EVENT_TYPE_CREATE a", "EVENT_TYPE_RENAME a", "EVENT_TYPE_CREATE b")
}

// TestWatcher polls GetWatcherEvents until the events it wants came (the
// runner reports them after a short quiet period), never by time.
func TestWatcher(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := guard(t)
	w, err := e.fs.CreateWatcher(ctx, connect.NewRequest(&filesystem.CreateWatcherRequest{Path: e.workspace, Recursive: true, IncludeEntry: true}))
	if err != nil {
		t.Fatal(err)
	}
	id := w.Msg.GetWatcherId()
	var got []string
	await := func(want ...string) {
		t.Helper()
		for !subsequence(want, got) {
			evs, err := e.fs.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: id}))
			if err != nil {
				t.Fatalf("GetWatcherEvents: %v (events so far %q, want %q)", err, got, want)
			}
			for _, ev := range evs.Msg.GetEvents() {
				got = append(got, ev.GetType().String()+" "+ev.GetName()+" "+ev.GetEntry().GetType().String())
			}
		}
	}
	must(t, os.MkdirAll(filepath.Join(e.workspace, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(e.workspace, "d", "f"), []byte("x"), 0o644))
	await("EVENT_TYPE_CREATE d FILE_TYPE_DIRECTORY", "EVENT_TYPE_CREATE d/f FILE_TYPE_FILE")

	got = nil
	must(t, os.WriteFile(filepath.Join(e.workspace, "d", "tmp"), nil, 0o644))
	must(t, os.Remove(filepath.Join(e.workspace, "d", "tmp")))
	must(t, os.Rename(filepath.Join(e.workspace, "d", "f"), filepath.Join(e.workspace, "d", "g")))
	// A removed or renamed-away entry has no entry to describe; one
	// removed before its CREATE was reported may have none either.
	await("EVENT_TYPE_REMOVE d/tmp FILE_TYPE_UNSPECIFIED", "EVENT_TYPE_RENAME d/f FILE_TYPE_UNSPECIFIED", "EVENT_TYPE_CREATE d/g FILE_TYPE_FILE")
	if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "EVENT_TYPE_CREATE d/tmp ") }) {
		t.Errorf("events %q, want the CREATE of d/tmp before its REMOVE", got)
	}

	if _, err := e.fs.RemoveWatcher(ctx, connect.NewRequest(&filesystem.RemoveWatcherRequest{WatcherId: id})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fs.GetWatcherEvents(ctx, connect.NewRequest(&filesystem.GetWatcherEventsRequest{WatcherId: id})); code(err) != connect.CodeNotFound {
		t.Errorf("GetWatcherEvents after RemoveWatcher: %v, want NotFound", err)
	}
}

// subsequence says whether want appears in got in order, other events
// between (a write is often followed by a chmod of its times, and so on).
func subsequence(want, got []string) bool {
	for _, g := range got {
		if len(want) > 0 && g == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
