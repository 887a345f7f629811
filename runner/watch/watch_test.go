package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/watch"
)

// started runs a watch of paths in ws and returns its reports and the
// channel Run's error arrives on. The watch is set up when the first
// probe write is reported (inotify watches exist only once Run has added
// them, and Run reports nothing before).
func started(t *testing.T, ws string, paths ...string) (<-chan protocol.WatchChanges, <-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	reports := make(chan protocol.WatchChanges, 64)
	done := make(chan error, 1)
	probe := filepath.Join(ws, ".probe")
	paths = append(paths, probe)
	go func() {
		done <- watch.New(ws).Run(ctx, protocol.WatchRequest{Paths: paths, DebounceMs: 50}, func(c protocol.WatchChanges) { reports <- c })
	}()
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		if err := os.WriteFile(probe, []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-reports:
			if has(c, probe) {
				return reports, done, cancel
			}
		case err := <-done:
			t.Fatalf("watch ended before it started: %v", err)
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the watch never reported the probe file")
		}
	}
}

func has(c protocol.WatchChanges, path string) bool {
	for _, ch := range c.Changes {
		if ch.Path == path {
			return true
		}
	}
	return false
}

// waitFor returns the first report that names path.
func waitFor(t *testing.T, reports <-chan protocol.WatchChanges, path string) protocol.WatchChange {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case c := <-reports:
			for _, ch := range c.Changes {
				if ch.Path == path {
					return ch
				}
			}
		case <-deadline:
			t.Fatalf("no change of %s reported", path)
		}
	}
}

func TestWatchReportsChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(ws string)
		watch   string // relative to ws
		change  func(t *testing.T, ws string)
		entries bool
		content bool
	}{
		{name: "file written in place", watch: "a.txt",
			setup:   func(ws string) { os.WriteFile(filepath.Join(ws, "a.txt"), []byte("1"), 0o644) },
			change:  func(t *testing.T, ws string) { appendTo(t, filepath.Join(ws, "a.txt"), "2") },
			content: true},
		{name: "file replaced by rename", watch: "b.txt",
			setup: func(ws string) { os.WriteFile(filepath.Join(ws, "b.txt"), []byte("1"), 0o644) },
			change: func(t *testing.T, ws string) {
				tmp := filepath.Join(ws, ".b.tmp")
				os.WriteFile(tmp, []byte("2"), 0o644)
				if err := os.Rename(tmp, filepath.Join(ws, "b.txt")); err != nil {
					t.Fatal(err)
				}
			},
			entries: true, content: true},
		{name: "file that appears", watch: "later.txt",
			change:  func(t *testing.T, ws string) { os.WriteFile(filepath.Join(ws, "later.txt"), nil, 0o644) },
			entries: true, content: true},
		{name: "directory entry created", watch: "dir",
			setup:   func(ws string) { os.Mkdir(filepath.Join(ws, "dir"), 0o755) },
			change:  func(t *testing.T, ws string) { os.WriteFile(filepath.Join(ws, "dir", "new"), nil, 0o644) },
			entries: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if tc.setup != nil {
				tc.setup(ws)
			}
			reports, _, _ := started(t, ws, tc.watch)
			tc.change(t, ws)
			got := waitFor(t, reports, tc.watch)
			if tc.entries && !got.Entries || tc.content && !got.Content {
				t.Errorf("change of %s = %+v, want entries %v content %v", tc.watch, got, tc.entries, tc.content)
			}
		})
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestWatchBounds(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	many := make([]string, protocol.MaxWatchPaths+1)
	for i := range many {
		many[i] = "f" + string(rune('a'+i%26))
	}
	tests := []struct {
		name string
		req  protocol.WatchRequest
		want string
		code protocol.Code
	}{
		{"none", protocol.WatchRequest{}, "no paths", protocol.CodeInvalid},
		{"too many", protocol.WatchRequest{Paths: many}, "above the limit of 64", protocol.CodeInvalid},
		{"negative debounce", protocol.WatchRequest{Paths: []string{"x"}, DebounceMs: -1}, "negative", protocol.CodeInvalid},
		{"missing directory", protocol.WatchRequest{Paths: []string{"no/such/dir/file"}}, "directory exists", protocol.CodeNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := watch.New(ws).Run(t.Context(), tc.req, func(protocol.WatchChanges) {})
			if err == nil || !strings.Contains(err.Error(), tc.want) || protocol.CodeOf(err) != tc.code {
				t.Fatalf("Run = %v (code %v), want %q (code %v)", err, protocol.CodeOf(err), tc.want, tc.code)
			}
		})
	}
}

// A cancelled watch returns nil, and closes its inotify descriptor.
func TestWatchCancel(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	_, done, cancel := started(t, ws, ".")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cancelled watch returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancelled watch did not return")
	}
}
