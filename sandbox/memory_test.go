package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/sandbox"
)

func TestCheckMemory(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name           string
		memory, tmp    int64
		tmpfsWorkspace bool
		wantErr        string
	}{
		{"defaults", 0, 0, false, ""},
		{"defaults with a tmpfs workspace", 0, 0, true, ""},
		{"exact fit", 448 * mib, 256 * mib, false, ""},
		{"one MiB short", 447 * mib, 256 * mib, false, "= 448 MiB exceed the memory limit (447 MiB)"},
		{"tmpfs workspace needs its minimum", 448 * mib, 256 * mib, true, "a tmpfs /workspace of at least 16 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := sandbox.Limits{MemoryBytes: tt.memory, TmpBytes: tt.tmp}.WithDefaults()
			err := l.CheckMemory(tt.tmpfsWorkspace)
			var me *sandbox.MemoryError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (!errors.As(err, &me) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want a *MemoryError containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestTmpfsWorkspaceFits: the fallback workspace is cut so that every
// tmpfs together still leaves the runner its headroom.
func TestTmpfsWorkspaceFits(t *testing.T) {
	t.Parallel()
	for _, l := range []sandbox.Limits{
		{},
		{MemoryBytes: 2 << 30, WorkspaceBytes: 100 << 20},
		{MemoryBytes: 1 << 30, TmpBytes: 64 << 20},
	} {
		l = l.WithDefaults()
		ws := l.TmpfsWorkspaceBytes()
		if ws <= 0 || ws > l.WorkspaceBytes || l.TmpBytes+sandbox.ShmBytes+ws+sandbox.RunnerHeadroomBytes > l.MemoryBytes {
			t.Errorf("limits %+v: tmpfs workspace %d bytes does not fit with the runner's headroom", l, ws)
		}
	}
	if got := (sandbox.Limits{MemoryBytes: 2 << 30, WorkspaceBytes: 100 << 20}).WithDefaults().TmpfsWorkspaceBytes(); got != 100<<20 {
		t.Errorf("a workspace that fits is cut to %d, want the configured 100 MiB", got)
	}
}
