package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/watch"
)

// An events watch reports each change by name and in order, however
// quickly one follows another: the watch is set up when its first
// (empty) report arrives, so nothing here waits for time to pass.
func TestWatchEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, ws string)
		want   []protocol.WatchEvent
	}{
		{name: "created and removed at once",
			change: func(t *testing.T, ws string) {
				must(t, os.WriteFile(filepath.Join(ws, "tmp"), nil, 0o644))
				must(t, os.Remove(filepath.Join(ws, "tmp")))
			},
			want: []protocol.WatchEvent{{Name: "tmp", Op: protocol.WatchCreate}, {Name: "tmp", Op: protocol.WatchRemove}}},
		{name: "renamed",
			change: func(t *testing.T, ws string) {
				must(t, os.WriteFile(filepath.Join(ws, "a"), nil, 0o644))
				must(t, os.Rename(filepath.Join(ws, "a"), filepath.Join(ws, "b")))
			},
			want: []protocol.WatchEvent{{Name: "a", Op: protocol.WatchCreate}, {Name: "a", Op: protocol.WatchRename}, {Name: "b", Op: protocol.WatchCreate}}},
		{name: "written and chmodded",
			change: func(t *testing.T, ws string) {
				must(t, os.WriteFile(filepath.Join(ws, "w"), []byte("x"), 0o644))
				must(t, os.Chmod(filepath.Join(ws, "w"), 0o600))
			},
			want: []protocol.WatchEvent{{Name: "w", Op: protocol.WatchCreate}, {Name: "w", Op: protocol.WatchWrite}, {Name: "w", Op: protocol.WatchChmod}}},
		{name: "recursive, in a new directory",
			change: func(t *testing.T, ws string) {
				must(t, os.MkdirAll(filepath.Join(ws, "d", "e"), 0o755))
				must(t, os.WriteFile(filepath.Join(ws, "d", "e", "f"), nil, 0o644))
			},
			want: []protocol.WatchEvent{{Name: "d", Op: protocol.WatchCreate, Dir: true}, {Name: "d/e", Op: protocol.WatchCreate, Dir: true}, {Name: "d/e/f", Op: protocol.WatchCreate}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			reports := startEvents(t, ws)
			tc.change(t, ws)
			var got []protocol.WatchEvent
			deadline := time.After(30 * time.Second)
			for !isSubsequence(tc.want, got) {
				select {
				case c := <-reports:
					for _, ch := range c.Changes {
						got = append(got, ch.Events...)
					}
				case <-deadline:
					t.Fatalf("events %+v, want %+v among them in order", got, tc.want)
				}
			}
		})
	}
}

// startEvents runs an events watch of ws, recursive, and returns its
// reports once it is set up.
func startEvents(t *testing.T, ws string) <-chan protocol.WatchChanges {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	reports := make(chan protocol.WatchChanges, 64)
	done := make(chan error, 1)
	req := protocol.WatchRequest{Paths: []string{"."}, DebounceMs: 50, Events: true, Recursive: true}
	go func() { done <- watch.New(ws).Run(ctx, req, func(c protocol.WatchChanges) { reports <- c }) }()
	select {
	case c := <-reports:
		if len(c.Changes) != 0 {
			t.Fatalf("first report %+v, want the empty one that says the watch is set up", c)
		}
	case err := <-done:
		t.Fatalf("watch ended before it started: %v", err)
	}
	return reports
}

// isSubsequence says whether want appears in got in order (other events
// may come between: a write is also a chmod of the times, and so on).
func isSubsequence(want, got []protocol.WatchEvent) bool {
	for _, ev := range got {
		if len(want) > 0 && ev == want[0] {
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
