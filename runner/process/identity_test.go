package process_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestStartIdentity checks that a background process's tag, argv and
// working directory are in the ProcessInfo of every operation that
// returns one.
func TestStartIdentity(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	m := process.NewManager(process.Options{Workspace: ws})
	t.Cleanup(m.Close)
	wsDir, err := m.Workdir("")
	must(t, err)
	subDir, err := m.Workdir("sub")
	must(t, err)
	tests := []struct {
		name     string
		req      protocol.ExecRequest
		wantArgv []string
		wantCwd  string
	}{
		{"command", protocol.ExecRequest{Command: "cat", Tag: "build"}, nil, wsDir},
		{"argv", protocol.ExecRequest{Argv: []string{"cat", "-u"}, Tag: "t 2"}, []string{"cat", "-u"}, wsDir},
		{"relative cwd", protocol.ExecRequest{Command: "cat", Cwd: "sub"}, nil, subDir},
		{"cwd through a symlink", protocol.ExecRequest{Argv: []string{"cat"}, Cwd: "link"}, []string{"cat"}, subDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started, err := m.Start(tt.req)
			must(t, err)
			check := func(from string, got protocol.ProcessInfo) {
				t.Helper()
				if got.ID != started.ID || got.Tag != tt.req.Tag || !slices.Equal(got.Argv, tt.wantArgv) || got.Cwd != tt.wantCwd {
					t.Errorf("%s: id %s tag %q argv %q cwd %q, want %s %q %q %q",
						from, got.ID, got.Tag, got.Argv, got.Cwd, started.ID, tt.req.Tag, tt.wantArgv, tt.wantCwd)
				}
			}
			check("start", started)
			for _, p := range m.List().Processes {
				if p.ID == started.ID {
					check("list", p)
				}
			}
			out, err := m.Output(t.Context(), protocol.ProcessOutputRequest{ID: started.ID})
			must(t, err)
			check("output", out.Process)
			w, err := m.Write(protocol.ProcessWriteRequest{ID: started.ID, Data: []byte("x\n")})
			must(t, err)
			check("write", w)
			s, err := m.Signal(protocol.ProcessSignalRequest{ID: started.ID, Signal: "KILL"})
			must(t, err)
			check("signal", s)
			check("after exit", waitExited(t, m, started.ID))
		})
	}
}
