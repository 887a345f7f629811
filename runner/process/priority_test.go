package process_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestUserCodeRunsNiced: what a call starts, and what that forks, runs
// at UserNice and cannot lower it; the runner itself keeps its priority.
func TestUserCodeRunsNiced(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		// Root could renice back; the sandbox user cannot. The first two
		// checks still hold as root.
		t.Log("running as root: the renice refusal is not checked")
	}
	m := newManager(t)
	var r recorder
	res, err := m.Run(t.Context(), protocol.ExecRequest{Command: "nice; sh -c nice; renice -n 0 -p $$ >/dev/null 2>&1 && echo reniced || echo refused"}, r.emit)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	lines := strings.Split(strings.TrimSpace(r.stream(protocol.EventStdout)), "\n")
	want := fmt.Sprint(process.UserNice)
	if len(lines) != 3 || lines[0] != want || lines[1] != want {
		t.Fatalf("nice of the command and its child: %q, want %s twice", lines, want)
	}
	if os.Geteuid() != 0 && lines[2] != "refused" {
		t.Errorf("user code lowered its own nice value: %q", lines[2])
	}
	if own := niceOf(t, os.Getpid()); own != "0" {
		t.Errorf("the runner's own nice (its main thread's) is %s, want 0", own)
	}
}

// niceOf reads a process's nice value (field 19 of /proc/PID/stat).
func niceOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	return strings.Fields(rest)[16]
}

// TestTimeoutIsTheGatewaysToDecide: a requested timeout is applied as
// asked, however long; the runner's default only fills in for none.
func TestTimeoutIsTheGatewaysToDecide(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ms   int64
		want time.Duration
	}{{0, time.Minute}, {1500, 1500 * time.Millisecond}, {20 * 60 * 1000, 20 * time.Minute}, {6 * 3600 * 1000, 6 * time.Hour}} {
		if got, err := process.Timeout(tt.ms, time.Minute); err != nil || got != tt.want {
			t.Errorf("Timeout(%d ms) = %v, %v; want %v", tt.ms, got, err, tt.want)
		}
	}
	if _, err := process.Timeout(-1, time.Minute); err == nil {
		t.Error("a negative timeout was accepted")
	}
}
