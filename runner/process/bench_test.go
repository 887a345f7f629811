package process_test

import (
	"testing"

	"github.com/sandgate/sandgate/runner/process"

	"github.com/sandgate/sandgate/runner/protocol"
)

// BenchmarkRunEcho is the runner's own cost around one short command:
// validation, spawn, pumping, the tree sweep and the result. Compare it
// with a bare fork+exec of the same command to see the bookkeeping.
func BenchmarkRunEcho(b *testing.B) {
	m := process.NewManager(process.Options{Workspace: b.TempDir()})
	defer m.Close()
	for b.Loop() {
		if _, err := m.Run(b.Context(), protocol.ExecRequest{Command: "echo hi"}, func(protocol.Event) {}); err != nil {
			b.Fatal(err)
		}
	}
}
