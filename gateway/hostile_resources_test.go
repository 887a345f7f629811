package gateway_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dockerapi "github.com/docker/docker/client"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// hostileLimits are small enough that every exhaustion attack reaches
// its limit in a second or two, and consistent with each other: /tmp and
// /dev/shm, charged to memory, leave the runner its headroom
// (sandbox.Limits.CheckMemory), and /workspace is on disk, so filling any
// of them is ENOSPC, not OOM.
var hostileLimits = sandbox.Limits{
	CPUs:           1,
	MemoryBytes:    256 << 20,
	Pids:           128,
	WorkspaceBytes: 64 << 20,
	TmpBytes:       32 << 20,
	NoFile:         256,
	FileSizeBytes:  48 << 20,
	CallTimeout:    30 * time.Second,
}

// hostileGateway starts a gateway with hostileLimits and quotas high
// enough for one test's parallel attacker sessions and its canary.
func hostileGateway(t *testing.T) *testGateway {
	t.Helper()
	return startGateway(t, func(c *gateway.Config) {
		c.Limits = hostileLimits
		c.MaxSandboxesPerTenant = 40
		c.ToolCallsPerMinute = 100000
	})
}

// hostileCase is one attack: a shell command, and what its result and its
// tool.end audit record must say.
type hostileCase struct {
	name    string
	command string
	timeout int                                                       // seconds; 0 for the gateway's default
	check   func(t *testing.T, r execResult, res *mcp.CallToolResult) // the caller was told what happened
	outcome string                                                    // tool.end outcome
}

// TestHostileResourceExhaustion runs each exhaustion attack in its own
// session, all in parallel, while a canary session keeps working, and
// checks that what the sandboxes wrote reached the host disk only inside
// their workspace quotas.
func TestHostileResourceExhaustion(t *testing.T) {
	t.Parallel()
	tg := hostileGateway(t)
	varBefore := varDirBytes(t, tg)
	stop := startCanary(t, tg)

	fill := func(dir string) hostileCase {
		return hostileCase{
			name:    "fill " + dir,
			command: `i=0; while head -c 4M /dev/zero > ` + dir + `/fill$i; do i=$((i+1)); done; df -k ` + dir + `; exit 1`,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				if !strings.Contains(r.Stderr, "No space left on device") {
					t.Errorf("want ENOSPC on stderr: %+v", r)
				}
			},
			outcome: audit.OutcomeError,
		}
	}
	cases := []hostileCase{
		{
			name:    "fork bomb",
			command: `bomb() { bomb | bomb & }; bomb; sleep 3`,
			timeout: 6,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				if !strings.Contains(r.Stderr, "Cannot fork") {
					t.Errorf("fork bomb: the result does not say forks failed: %+v", r)
				}
			},
		},
		{
			name: "thread bomb",
			command: `python3 -c '
import threading, time
n = 0
try:
    while True:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        n += 1
except RuntimeError as e:
    print("started", n, "threads:", e)
    raise SystemExit(3)
'`,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				if r.ExitCode != 3 || !strings.Contains(r.Stdout, "can't start new thread") {
					t.Errorf("thread bomb: %+v", r)
				}
			},
			outcome: audit.OutcomeError,
		},
		{
			name:    "memory bomb",
			command: `python3 -c "b = b'x' * (600 << 20); print(len(b))"`,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				if !r.OOMKilled || !strings.Contains(r.Message, "out of memory") || !strings.Contains(r.Message, "256 MiB") {
					t.Errorf("memory bomb: %+v", r)
				}
			},
			outcome: audit.OutcomeOOM,
		},
		fill("/tmp"),
		fill("/dev/shm"),
		fill("/workspace"),
		{
			name: "file over the fsize limit",
			command: `head -c 64M /dev/zero > /workspace/big; echo "head exit $?"; rm /workspace/big; python3 -c '
import signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
open("/workspace/big2", "wb").write(b"x" * (64 << 20))
'`,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				// SIGXFSZ (25) kills head; a process ignoring it gets EFBIG.
				if !strings.Contains(r.Stdout, "head exit 153") || !strings.Contains(r.Stderr, "File too large") {
					t.Errorf("fsize: %+v", r)
				}
			},
			outcome: audit.OutcomeError,
		},
		{
			name: "file descriptor exhaustion",
			command: `python3 -c '
fs = []
try:
    while True:
        fs.append(open("/dev/null"))
except OSError as e:
    print("opened", len(fs), e)
    raise SystemExit(4)
'`,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				if r.ExitCode != 4 || !strings.Contains(r.Stdout, "Too many open files") {
					t.Errorf("fd exhaustion: %+v", r)
				}
			},
			outcome: audit.OutcomeError,
		},
		{
			name:    "cpu spin is throttled and killed at its timeout",
			command: `for i in 1 2 3 4; do (while :; do :; done) & done; wait`,
			timeout: 3,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				if !r.TimedOut {
					t.Errorf("cpu spin: want timed_out: %+v", r)
				}
				// Four spinning shells on a host with more than one core
				// would use more than one core's worth without the quota.
				quota := float64(r.DurationMs) * hostileLimits.CPUs
				t.Logf("cpu spin: cpu_ms %d over %d ms wall (quota %.0f)", r.CPUMs, r.DurationMs, quota)
				if float64(r.CPUMs) > quota*1.3+300 || r.CPUMs < 100 {
					t.Errorf("cpu spin: cpu_ms %d outside (100, %.0f]", r.CPUMs, quota*1.3+300)
				}
			},
			outcome: audit.OutcomeTimeout,
		},
	}
	t.Run("attacks", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				runHostile(t, tg, legacyClient(t, tg.URL), tc)
			})
		}
	})
	stop()

	// Only what the code under test owns is measured, never the whole
	// disk, which other processes on the machine write to: the gateway's
	// own files, each sandbox's workspace image (checked against its
	// quota here) and each container's writable layer (runHostile).
	varAfter := varDirBytes(t, tg)
	t.Logf("gateway var dir (without workspaces): %d -> %d KiB", varBefore>>10, varAfter>>10)
	if grew := varAfter - varBefore; grew > 4<<20 {
		t.Errorf("the gateway's var dir grew by %d KiB during the attacks", grew>>10)
	}
	assertWorkspacesWithinQuota(t, tg, hostileLimits.WorkspaceBytes)
}

// runHostile runs tc in c's sandbox, checks the result, the audit record
// and that the sandbox still answers afterwards.
func runHostile(t *testing.T, tg *testGateway, c *client.Client, tc hostileCase) {
	t.Helper()
	args := map[string]any{}
	if tc.timeout > 0 {
		args["timeout"] = tc.timeout
	}
	began := time.Now()
	r, res := shell(t, c, tc.command, args)
	t.Logf("%s: %v, exit %d, signal %q, timed_out %v, oom %v, message %q, stdout %q, stderr %q",
		tc.name, time.Since(began).Round(time.Millisecond), r.ExitCode, r.Signal, r.TimedOut, r.OOMKilled, r.Message, cut(r.Stdout, 200), cut(r.Stderr, 200))
	if tc.outcome != "" && tc.outcome != audit.OutcomeOK && !res.IsError {
		t.Errorf("want isError: %s", text(res))
	}
	tc.check(t, r, res)

	end := lastToolEnd(t, tg, c.GetSessionId())
	if tc.outcome != "" && end.Outcome != tc.outcome {
		t.Errorf("audit tool.end outcome %q, want %q: %+v", end.Outcome, tc.outcome, end)
	}
	if end.ExitCode == nil || *end.ExitCode != r.ExitCode || end.OOMKilled != r.OOMKilled || end.TimedOut != r.TimedOut {
		t.Errorf("audit tool.end does not match the result %+v: %+v", r, end)
	}

	assertNothingLeft(t, c)
	assertLayerSmall(t, end.ContainerID)
}

// assertLayerSmall checks that nothing the sandbox wrote reached its
// container's writable layer on the host disk: /workspace is its own
// file system, /tmp and /dev/shm are tmpfs and the root is read-only.
func assertLayerSmall(t *testing.T, containerID string) {
	t.Helper()
	info, _, err := hostDocker(t).ContainerInspectWithRaw(t.Context(), containerID, true)
	if err != nil {
		t.Fatalf("inspect %s: %v", containerID, err)
	}
	if info.SizeRw == nil || *info.SizeRw > 1<<20 {
		t.Errorf("container %s has %v bytes in its writable layer", containerID, info.SizeRw)
	}
}

// assertNothingLeft checks the sandbox answers and holds nothing a
// finished call started: only init, the runner, and the ps that looks,
// and no zombies.
func assertNothingLeft(t *testing.T, c *client.Client) {
	t.Helper()
	r, res := shell(t, c, "ps -eo pid,stat,args --no-headers", nil)
	if res.IsError {
		t.Fatalf("the sandbox does not answer: %s", text(res))
	}
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		stat, args := f[1], strings.Join(f[2:], " ")
		if strings.HasPrefix(stat, "Z") {
			t.Errorf("zombie left in the sandbox: %q", line)
		}
		if !strings.HasPrefix(args, "/sbin/docker-init") && !strings.HasPrefix(args, "/dev/init") && !strings.HasPrefix(args, "/opt/sandgate/runner") &&
			!strings.HasPrefix(args, "/bin/sh -c ps -eo") && !strings.HasPrefix(args, "ps -eo") {
			left = append(left, line)
		}
	}
	if len(left) > 0 {
		t.Errorf("processes left running after the call:\n%s\nall:\n%s", strings.Join(left, "\n"), r.Stdout)
	}
}

// lastToolEnd returns the session's newest run_shell tool.end record.
func lastToolEnd(t *testing.T, tg *testGateway, session string) audit.Event {
	t.Helper()
	var last *audit.Event
	recs := auditRecords(t, tg.AuditPath)
	for i := range recs {
		if recs[i].Kind == audit.KindToolEnd && recs[i].Session == session && recs[i].Tool == "run_shell" {
			last = &recs[i]
		}
	}
	if last == nil {
		t.Fatalf("no run_shell tool.end record for session %s", session)
	}
	return *last
}

// varDirBytes sums the gateway's own files in its var dir: the audit
// log, sockets, auth state. Workspaces are the sandboxes' files and are
// measured against their quota instead (assertWorkspacesWithinQuota).
func varDirBytes(t *testing.T, tg *testGateway) int64 {
	t.Helper()
	var n int64
	workspaces := filepath.Join(tg.VarDir, "workspaces")
	_ = filepath.WalkDir(tg.VarDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() && path == workspaces {
			return filepath.SkipDir
		}
		if !e.IsDir() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// assertWorkspacesWithinQuota checks that every workspace image of tg
// takes at most quota bytes of real host disk, whatever its sandbox wrote.
func assertWorkspacesWithinQuota(t *testing.T, tg *testGateway, quota int64) {
	t.Helper()
	images, err := filepath.Glob(filepath.Join(tg.VarDir, "workspaces", "*", "disk.ext4"))
	if err != nil {
		t.Fatal(err)
	}
	if len(images) == 0 {
		t.Fatalf("no workspace images under %s: workspaces are not on disk", tg.VarDir)
	}
	for _, img := range images {
		var st syscall.Stat_t
		if err := syscall.Stat(img, &st); err != nil {
			t.Fatal(err)
		}
		if used := st.Blocks * 512; used > quota {
			t.Errorf("workspace image %s takes %d MiB of host disk, over its %d MiB quota", img, used>>20, quota>>20)
		}
	}
}

// hostDocker is a plain Docker API client, for what a test does to a
// sandbox from outside (kill it, inspect it).
func hostDocker(t *testing.T) *dockerapi.Client {
	t.Helper()
	cli, err := dockerapi.NewClientWithOpts(dockerapi.FromEnv, dockerapi.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
