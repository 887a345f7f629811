package process_test

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestClose checks that Close ends a running call and every background
// process, and that the Manager refuses work afterwards.
func TestClose(t *testing.T) {
	t.Parallel()
	m := process.NewManager(process.Options{Workspace: t.TempDir()})
	bg, err := m.Start(protocol.ExecRequest{Command: "setsid sleep 1006.001 & sleep 1006.002"})
	must(t, err)
	done := make(chan protocol.ExecResult)
	var r recorder
	go func() {
		res, _ := m.Run(t.Context(), protocol.ExecRequest{Command: "sleep 1006.003 & sleep 1000"}, r.emit)
		done <- res
	}()
	time.Sleep(200 * time.Millisecond)
	m.Close()
	res := <-done
	if !res.Canceled || res.Message != "canceled" {
		t.Errorf("running call after Close = %+v", res)
	}
	if info := m.List().Processes[0]; info.ID != bg.ID || info.Running {
		t.Errorf("background process after Close = %+v", info)
	}
	assertClean(t, bg.Pid, "", "sleep 1006.00")
	assertClean(t, res.Pid, "", "")
	if _, err := m.Run(t.Context(), protocol.ExecRequest{Command: "true"}, func(protocol.Event) {}); codeOf(err) != protocol.CodeUnavailable {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := m.Start(protocol.ExecRequest{Command: "true"}); codeOf(err) != protocol.CodeUnavailable {
		t.Errorf("Start after Close: %v", err)
	}
	m.Close() // twice is fine
}
