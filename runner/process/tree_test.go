package process_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// escapes are ways a command leaves processes behind when its root exits.
// Each runs "sleep <word>" so the test can find it by its command line.
var escapes = []struct{ name, cmd string }{
	{"background", "sleep %s &"},
	{"nohup", "nohup sleep %s >/dev/null 2>&1 &"},
	{"setsid", "setsid sleep %s &"},
	{"double fork", "(sleep %s &) &"},
	{"setsid double fork", "(setsid sleep %s &) &"},
	{"setsid sh", "setsid sh -c 'sleep %[1]s & sleep %[1]s' &"},
	{"cleared env", "env -i /usr/bin/setsid /bin/sleep %s &"},
	{"cleared env double fork", "(env -i /usr/bin/setsid /bin/sleep %s &) &"},
	{"holds stdout", "sh -c 'exec sleep %s' 2>&1 &"},
	{"process group", "sh -c 'sleep %s & wait' &"},
	{"many", "for i in 1 2 3 4 5 6 7 8; do (setsid sleep %s &) ; done"},
}

// TestTreeKilled checks that whatever way a call leaves processes behind,
// none is left, and no zombie either, once Run returns: after the root
// exits, after a timeout, and after a cancel. It does not run in parallel
// so that any zombie child of the test process is a failure.
func TestTreeKilled(t *testing.T) {
	ends := []struct {
		name    string
		suffix  string
		timeout int64
		cancel  time.Duration
	}{
		{"root exits", "\nsleep 0.2; exit 0", 0, 0},
		{"timeout", "\nsleep 1000", 300, 0},
		{"cancel", "\nsleep 1000", 0, 300 * time.Millisecond},
	}
	m := newManager(t)
	n := 0
	for _, end := range ends {
		for _, esc := range escapes {
			n++
			word := fmt.Sprintf("%d.%03d", 1000+n, n) // unique sleep duration
			mark := fmt.Sprintf("TREE_TEST=%d", n)
			t.Run(end.name+"/"+esc.name, func(t *testing.T) {
				ctx := t.Context()
				if end.cancel > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, end.cancel)
					defer cancel()
				}
				var r recorder
				start := time.Now()
				res, err := m.Run(ctx, protocol.ExecRequest{
					Command:   fmt.Sprintf(esc.cmd, word) + end.suffix,
					Env:       map[string]string{"TREE_TEST": fmt.Sprint(n)},
					TimeoutMs: end.timeout,
				}, r.emit)
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took > 5*time.Second {
					t.Errorf("Run took %v", took)
				}
				switch end.name {
				case "root exits":
					if res.ExitCode != 0 || res.TimedOut || res.Canceled {
						t.Errorf("result = %+v", res)
					}
				case "timeout":
					if !res.TimedOut || res.Message != "timed out after 300ms; the process tree was killed" {
						t.Errorf("result = %+v", res)
					}
				case "cancel":
					if !res.Canceled || res.Message != "canceled" || res.ExitCode != -1 {
						t.Errorf("result = %+v", res)
					}
				}
				assertAlone(t, res.Pid, mark, "sleep "+word)
			})
		}
	}
}

// TestTreeSparesOthers checks that a sweep kills only what its call
// started: not a concurrent call, not a background process, and not
// processes the runner started some other way (here: the test itself
// with os/exec, with and without a session of its own).
func TestTreeSparesOthers(t *testing.T) {
	m := newManager(t)
	foreignSetsid := exec.Command("sleep", "1001.777")
	foreignSetsid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	must(t, foreignSetsid.Start())
	bg, err := m.Start(protocol.ExecRequest{Command: "setsid sleep 1001.778 & sleep 1001.779"})
	must(t, err)

	other := make(chan protocol.ExecResult)
	var otherOut recorder
	go func() {
		res, _ := m.Run(t.Context(), protocol.ExecRequest{Command: "setsid sleep 1001.780 & sleep 1.5; echo done"}, otherOut.emit)
		other <- res
	}()
	time.Sleep(200 * time.Millisecond)
	foreign := exec.Command("sleep", "1001.781")
	must(t, foreign.Start())

	for range 3 {
		_, err := m.Run(t.Context(), protocol.ExecRequest{Command: "setsid sleep 1001.782 & (sleep 1001.783 &) & exit 0"}, func(protocol.Event) {})
		must(t, err)
	}
	assertAlone(t, 0, "", "sleep 1001.782")
	assertAlone(t, 0, "", "sleep 1001.783")

	res := <-other
	if res.ExitCode != 0 || otherOut.stream(protocol.EventStdout) != "done\n" {
		t.Errorf("concurrent call was disturbed: %+v, stdout %q", res, otherOut.stream(protocol.EventStdout))
	}
	for _, word := range []string{"1001.777", "1001.778", "1001.779", "1001.781"} {
		if len(leftovers(0, "", "sleep "+word, false)) == 0 {
			t.Errorf("sleep %s was killed", word)
		}
	}
	if info := m.List().Processes[0]; info.ID != bg.ID || !info.Running {
		t.Errorf("background process = %+v, want running", info)
	}
	// The foreign processes are still the test's to wait for: the reaper
	// must not have taken their exit status.
	for _, c := range []*exec.Cmd{foreign, foreignSetsid} {
		must(t, c.Process.Kill())
		if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("Wait = %v, want signal: killed", err)
		}
	}
	m.Close()
	assertAlone(t, bg.Pid, "", "sleep 1001.7")
}
