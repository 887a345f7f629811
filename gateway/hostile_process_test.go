package gateway_test

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
)

// TestHostileProcessEscape tries every way a command can leave something
// running after its call, in one attacker session (each case cleans up
// after itself or the next one fails), and checks nothing survives the
// call and no zombies pile up.
func TestHostileProcessEscape(t *testing.T) {
	t.Parallel()
	tg := hostileGateway(t)
	stop := startCanary(t, tg)
	c := legacyClient(t, tg.URL)

	exitsAtOnce := func(t *testing.T, r execResult, res *mcp.CallToolResult) {
		if r.ExitCode != 0 || r.TimedOut {
			t.Errorf("want a normal exit: %+v", r)
		}
	}
	timesOut := func(t *testing.T, r execResult, res *mcp.CallToolResult) {
		if !r.TimedOut || !strings.Contains(r.Message, "timed out") {
			t.Errorf("want timed_out with a message: %+v", r)
		}
	}
	cases := []hostileCase{
		{name: "nohup", command: `nohup sleep 2001 >/dev/null 2>&1 &`, check: exitsAtOnce, outcome: audit.OutcomeOK},
		{name: "setsid", command: `setsid sleep 2002 >/dev/null 2>&1 < /dev/null &`, check: exitsAtOnce, outcome: audit.OutcomeOK},
		{name: "double fork", command: `(sleep 2003 >/dev/null 2>&1 &) ; sh -c 'setsid sh -c "sleep 2004 &" &'`, check: exitsAtOnce, outcome: audit.OutcomeOK},
		{name: "daemon with setsid and a new process group at timeout", command: `setsid sh -c 'sleep 2005 & sleep 2006' & (trap '' HUP; sleep 2007 &); sleep 1000`, timeout: 2, check: timesOut, outcome: audit.OutcomeTimeout},
		{name: "ignores SIGTERM", command: `sh -c "trap '' TERM; sleep 2008 & wait" & trap '' TERM; sleep 1000`, timeout: 2, check: timesOut, outcome: audit.OutcomeTimeout},
		{
			name: "1000 short-lived children left as zombies",
			command: `python3 -c '
import os, time
for i in range(1000):
    if os.fork() == 0:
        os._exit(0)
    if i % 50 == 49:
        # reap a batch, so the pids limit is never the story; the last
        # 50 stay zombies until the call ends
        for _ in range(50):
            os.wait()
print("forked 1000", flush=True)
time.sleep(1000)
'`,
			// Long enough for 1000 niced forks on a heavily loaded 2-core
			// host (over 20 s there); the call still ends by its timeout,
			// with the last 50 children zombies.
			timeout: 30,
			check: func(t *testing.T, r execResult, res *mcp.CallToolResult) {
				timesOut(t, r, res)
				if !strings.Contains(r.Stdout, "forked 1000") {
					t.Errorf("the children were not all started: %+v", r)
				}
			},
			outcome: audit.OutcomeTimeout,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runHostile(t, tg, c, tc) })
	}
	stop()
}

// TestHostileOutputAbuse floods stdout and stderr in every shape and
// checks the result is capped, flagged and valid JSON, and the gateway's
// heap stays bounded.
func TestHostileOutputAbuse(t *testing.T) {
	t.Parallel()
	tg := hostileGateway(t)
	stop := startCanary(t, tg)
	c := legacyClient(t, tg.URL)

	capped := func(stream string) func(t *testing.T, r execResult, res *mcp.CallToolResult) {
		return func(t *testing.T, r execResult, res *mcp.CallToolResult) {
			out, truncated := r.Stdout, r.StdoutTruncated
			if stream == "stderr" {
				out, truncated = r.Stderr, r.StderrTruncated
			}
			// The client decoded the JSON result, so it was valid JSON;
			// strings in it are valid UTF-8 whatever the process wrote.
			// The cap counts the process's bytes; each invalid one becomes
			// a 3-byte U+FFFD, so runes are what is bounded here.
			if n := utf8.RuneCountInString(out); !truncated || n > 1<<20 || n < 1<<19 {
				t.Errorf("%s: %d bytes, truncated %v; want close to the 1 MiB cap and flagged", stream, n, truncated)
			}
			if !utf8.ValidString(out) {
				t.Errorf("%s is not valid UTF-8", stream)
			}
		}
	}
	cases := []hostileCase{
		{name: "yes", command: `yes`, timeout: 3, check: capped("stdout"), outcome: audit.OutcomeTimeout},
		{name: "50 MiB of binary", command: `head -c 50M /dev/urandom`, check: capped("stdout"), outcome: audit.OutcomeOK},
		{name: "one 100 MiB line", command: `head -c 100M /dev/zero | tr '\0' a`, check: capped("stdout"), outcome: audit.OutcomeOK},
		{name: "stderr only", command: `head -c 20M /dev/zero | tr '\0' e >&2`, check: capped("stderr"), outcome: audit.OutcomeOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			runHostile(t, tg, c, tc)
			runtime.GC()
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapInuse) - int64(before.HeapInuse)
			t.Logf("heap in use %d -> %d MiB", before.HeapInuse>>20, after.HeapInuse>>20)
			if grew > 64<<20 {
				t.Errorf("the gateway's heap grew by %d MiB", grew>>20)
			}
		})
	}
	stop()
}
