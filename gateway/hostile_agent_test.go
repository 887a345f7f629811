package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/sandgate/sandgate/gateway/audit"
)

// runnerPid prints the runner's pid, found as an attacker inside the
// sandbox would: by its command line (its /proc/PID/exe is not readable,
// the runner being non-dumpable).
const runnerPid = `for p in /proc/[0-9]*; do
  case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in /opt/sandgate/runner*|/sandgate/bin/runner*) echo ${p#/proc/};; esac
done | head -1`

// killRunner kills the runner from inside the sandbox.
const killRunner = `kill -9 $(` + runnerPid + `); sleep 5`

// TestHostileBreakingTheAgent attacks the runner and the container
// themselves, each in a fresh session, and checks the caller is told, no
// call hangs, and the session gets a working sandbox again.
func TestHostileBreakingTheAgent(t *testing.T) {
	t.Parallel()
	tg := hostileGateway(t)
	stop := startCanary(t, tg)

	cases := []struct {
		name   string
		dies   bool // the container is gone afterwards
		attack func(t *testing.T, c *client.Client)
	}{
		{"kill -9 the runner from inside", true, func(t *testing.T, c *client.Client) {
			res, err := callErr(t.Context(), c, "run_shell", map[string]any{"command": killRunner})
			if err != nil {
				t.Fatalf("the killing call got a protocol error: %v", err)
			}
			t.Logf("the killing call: isError %v: %s", res.IsError, text(res))
			if !res.IsError || !strings.Contains(text(res), "lost the connection to the sandbox") {
				t.Errorf("the call that killed the runner: %q", text(res))
			}
		}},
		{"remove the runner's socket", false, func(t *testing.T, c *client.Client) {
			// The socket dir is sealed once the runner listens
			// (sandbox/docker/socketdir.go): the sandbox cannot touch it.
			r, res := shell(t, c, "rm /run/sandgate/runner.sock; echo removed $?", nil)
			if res.IsError || !strings.Contains(r.Stderr, "Permission denied") || r.Stdout != "removed 1\n" {
				t.Errorf("rm socket: %+v; want Permission denied", r)
			}
		}},
		{"kill the container from outside", true, func(t *testing.T, c *client.Client) {
			id := sessionContainer(t, tg, c.GetSessionId())
			if err := hostDocker(t).ContainerKill(t.Context(), id, "KILL"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	t.Run("attacks", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c := legacyClient(t, tg.URL)
				mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "before.txt", "content": "x"}))
				tc.attack(t, c)

				// The next call answers promptly with a result, whatever
				// it says; no hang and no protocol error.
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				began := time.Now()
				res, err := callErr(ctx, c, "run_shell", map[string]any{"command": "echo next"})
				if err != nil {
					t.Fatalf("next call after the attack: protocol error after %v: %v", time.Since(began), err)
				}
				t.Logf("next call after %v: isError %v: %q", time.Since(began).Round(time.Millisecond), res.IsError, text(res))
				// The socket case keeps its connection; in the others the
				// container is gone, so the session's sandbox gets a new
				// container on its kept workspace and the result says so.
				if tc.dies {
					if res.IsError || execOf(res).Stdout != "next\n" || !strings.Contains(allText(res), "it was replaced") || !strings.Contains(allText(res), "/workspace was kept") {
						t.Fatalf("next call after the sandbox died: isError %v %q; want it run in a replacement that says the workspace was kept", res.IsError, allText(res))
					}
					var replaced []audit.Event
					for _, e := range auditRecords(t, tg.AuditPath) {
						if e.Kind == audit.KindSandboxReplace && e.Session == c.GetSessionId() {
							replaced = append(replaced, e)
						}
					}
					if len(replaced) != 1 || !strings.Contains(replaced[0].Summary["reason"], "died") || replaced[0].Summary["workspace_kept"] != "true" {
						t.Errorf("sandbox.replace records of the session: %+v, want one: runner died, workspace kept", replaced)
					}
				} else if res.IsError || execOf(res).Stdout != "next\n" {
					t.Fatalf("next call: %q", text(res))
				}
				r, res := shell(t, c, "echo recovered; ls /workspace", nil)
				if res.IsError || !strings.HasPrefix(r.Stdout, "recovered\n") {
					t.Fatalf("the session did not recover: %s", text(res))
				}
				// Whatever happened to the runner, the files are still there.
				if !strings.Contains(r.Stdout, "before.txt") {
					t.Fatalf("workspace after recovery lost its file: %q (died=%v)", r.Stdout, tc.dies)
				}
			})
		}
	})
	stop()
}

// lastCallRecord returns the session's newest tool.end or tool.denied
// record.
func lastCallRecord(t *testing.T, tg *testGateway, session string) audit.Event {
	t.Helper()
	var last audit.Event
	for _, e := range auditRecords(t, tg.AuditPath) {
		if (e.Kind == audit.KindToolEnd || e.Kind == audit.KindToolDenied) && e.Session == session {
			last = e
		}
	}
	return last
}

// sessionContainer returns the container of the session's newest sandbox,
// from the audit log.
func sessionContainer(t *testing.T, tg *testGateway, session string) string {
	t.Helper()
	var id string
	for _, e := range auditRecords(t, tg.AuditPath) {
		if (e.Kind == audit.KindSandboxCreate || e.Kind == audit.KindSandboxReplace) && e.Session == session && e.Outcome == audit.OutcomeOK {
			id = e.ContainerID
		}
	}
	if id == "" {
		t.Fatalf("no sandbox.create record for session %s", session)
	}
	return id
}
