package process_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestOOM(t *testing.T) {
	t.Parallel()
	const (
		sigkill  = unix.WaitStatus(unix.SIGKILL)
		exit137  = unix.WaitStatus(137 << 8)
		exit1    = unix.WaitStatus(1 << 8)
		limit512 = 512 << 20
	)
	snap := func(kills int64, has bool, limit int64) cgroup.Snapshot {
		return cgroup.Snapshot{Version: 2, OOMKills: kills, HasOOMKills: has, MemoryLimit: limit}
	}
	tests := []struct {
		name          string
		before, after cgroup.Snapshot
		ws            unix.WaitStatus
		killed        bool
		want          bool
		msg           string
	}{
		{"oom kill of the root", snap(1, true, limit512), snap(2, true, limit512), sigkill, false, true, "killed: out of memory (limit 512 MiB)"},
		{"shell reports a child's kill", snap(0, true, 2<<30), snap(1, true, 2<<30), exit137, false, true, "killed: out of memory (limit 2 GiB)"},
		{"no limit known", snap(0, true, 0), snap(1, true, 0), sigkill, false, true, "killed: out of memory"},
		{"counter unchanged", snap(3, true, limit512), snap(3, true, limit512), sigkill, false, false, ""},
		{"no counter", snap(0, false, limit512), snap(0, false, limit512), sigkill, false, false, ""},
		{"exit 137 without counter", snap(0, false, 0), snap(0, false, 0), exit137, false, false, ""},
		{"other exit", snap(0, true, limit512), snap(1, true, limit512), exit1, false, false, ""},
		{"runner's own kill", snap(0, true, limit512), snap(1, true, limit512), sigkill, true, false, "timed out after 5s; the process tree was killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oom, msg := process.OOM(tt.before, tt.after, tt.ws, tt.killed)
			if oom != tt.want || msg != tt.msg {
				t.Errorf("OOM = %v %q, want %v %q", oom, msg, tt.want, tt.msg)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	bytes := map[int64]string{512 << 20: "512 MiB", 1 << 30: "1 GiB", 3 << 29: "1536 MiB", 1<<20 + 1<<19: "1.5 MiB", 100: "100 bytes"}
	for n, want := range bytes {
		if got := process.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	durations := map[time.Duration]string{
		5 * time.Second: "5s", time.Minute: "1m", 90 * time.Second: "1m30s", 70 * time.Second: "1m10s",
		2 * time.Hour: "2h", 300 * time.Millisecond: "300ms", 2*time.Hour + 10*time.Minute: "2h10m",
	}
	for d, want := range durations {
		if got := process.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want unix.Signal
		code protocol.Code
	}{
		{"", unix.SIGTERM, ""},
		{"SIGKILL", unix.SIGKILL, ""},
		{"kill", unix.SIGKILL, ""},
		{" int ", unix.SIGINT, ""},
		{"Usr1", unix.SIGUSR1, ""},
		{"15", unix.SIGTERM, ""},
		{"64", unix.Signal(64), ""},
		{"0", 0, protocol.CodeInvalid},
		{"-9", 0, protocol.CodeInvalid},
		{"SIGFOO", 0, protocol.CodeInvalid},
		{"SIG", 0, protocol.CodeInvalid},
	}
	for _, tt := range tests {
		got, err := process.ParseSignal(tt.in)
		if got != tt.want || codeOf(err) != tt.code {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v, code %q", tt.in, got, err, tt.want, tt.code)
		}
	}
}
