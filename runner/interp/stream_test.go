package interp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/runner/interp"
	"github.com/sandgate/sandgate/runner/protocol"
)

// events collects what a streamed cell emits, safely from both output
// readers, and writes gate once it has seen stdout's first line.
type events struct {
	gate string

	mu     sync.Mutex
	stdout []string
	stderr []string
}

func (e *events) emit(ev protocol.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Type {
	case protocol.EventStdout:
		e.stdout = append(e.stdout, string(ev.Data))
		if len(e.stdout) == 1 && e.gate != "" {
			_ = os.WriteFile(e.gate, nil, 0o644)
		}
	case protocol.EventStderr:
		e.stderr = append(e.stderr, string(ev.Data))
	}
}

// gatedCell prints, then waits (up to a minute) for gate, then prints
// again: it ends with "second" only if its first line reached someone
// while it ran.
func gatedCell(gate string) string {
	return fmt.Sprintf("import os, sys, time\nprint('first')\nprint('warn', file=sys.stderr)\n"+
		"for _ in range(600):\n    if os.path.exists(%q):\n        break\n    time.sleep(0.1)\nelse:\n    print('gave up')\n"+
		"print('second', end='')\n", gate)
}

// TestStreamWhileRunning: with Stream, a cell's output reaches emit as
// it is printed, a whole line per print, before the cell ends; the
// result then carries none of it. Without Stream, nothing is emitted.
func TestStreamWhileRunning(t *testing.T) {
	t.Parallel()
	m := newManager(t, interp.Options{})
	gate := filepath.Join(t.TempDir(), "gate")
	got := &events{gate: gate}
	res, err := m.Stream(t.Context(), protocol.InterpRequest{Language: "python", Code: gatedCell(gate), Stream: true, TimeoutMs: 120_000}, got.emit)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.stdout, []string{"first\n", "second"}) || !slices.Equal(got.stderr, []string{"warn\n"}) {
		t.Fatalf("streamed stdout %q, stderr %q; want the first line while the cell waited for it, then the rest", got.stdout, got.stderr)
	}
	if res.Stdout != "" || res.Stderr != "" || res.ErrorName != "" {
		t.Fatalf("streamed cell's result: %+v, want no output in it", res)
	}

	quiet := &events{}
	res, err = m.Stream(t.Context(), protocol.InterpRequest{Language: "python", Code: "print('kept')"}, quiet.emit)
	if err != nil || res.Stdout != "kept\n" || len(quiet.stdout) != 0 {
		t.Fatalf("unstreamed cell: %+v, %v; emitted %q", res, err, quiet.stdout)
	}
}
