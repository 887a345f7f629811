package process_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// newManager returns a Manager with a temporary workspace, closed when the
// test ends.
func newManager(t *testing.T) *process.Manager {
	t.Helper()
	m := process.NewManager(process.Options{Workspace: t.TempDir()})
	t.Cleanup(m.Close)
	return m
}

// recorder collects the events of one Run with their arrival times.
type recorder struct {
	mu     sync.Mutex
	events []protocol.Event
	times  []time.Time
	busy   bool
}

func (r *recorder) emit(ev protocol.Event) {
	r.mu.Lock()
	if r.busy {
		panic("emit called concurrently")
	}
	r.busy = true
	r.events = append(r.events, ev)
	r.times = append(r.times, time.Now())
	r.mu.Unlock()
	time.Sleep(10 * time.Microsecond) // widen the window a concurrent emit would hit
	r.mu.Lock()
	r.busy = false
	r.mu.Unlock()
}

// stream returns the concatenated data of events of type typ.
func (r *recorder) stream(typ protocol.EventType) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, ev := range r.events {
		if ev.Type == typ {
			b.Write(ev.Data)
		}
	}
	return b.String()
}

// proc is a process seen in /proc by the tests.
type proc struct {
	pid, ppid, pgrp, sid int
	state                string
	cmdline, environ     string
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d ppid %d sid %d state %s cmd %q", p.pid, p.ppid, p.sid, p.state, p.cmdline)
}

// procs lists every process in /proc.
func procs() []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		p := proc{pid: pid, state: f[0]}
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		p.sid, _ = strconv.Atoi(f[3])
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p.cmdline = strings.ReplaceAll(string(cmd), "\x00", " ")
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		p.environ = "\x00" + string(env)
		out = append(out, p)
	}
	return out
}

// leftovers returns the processes, zombies included, that a call with
// root pid, test marker mark ("K=V" in its Env) and unique word in its
// command lines left behind. A zombie has neither environment nor command
// line, so only its session and group tie it to the call; allZombies adds
// every zombie child of the test process, which only a test that runs
// alone may ask for.
func leftovers(root int, mark, word string, allZombies bool) []proc {
	var out []proc
	for _, p := range procs() {
		switch {
		case p.pid == os.Getpid():
		case root > 0 && (p.sid == root || p.pgrp == root || p.pid == root),
			mark != "" && strings.Contains(p.environ, "\x00"+mark+"\x00"),
			word != "" && strings.Contains(p.cmdline, word),
			allZombies && p.ppid == os.Getpid() && p.state == "Z":
			out = append(out, p)
		}
	}
	return out
}

// assertClean fails the test if leftovers finds anything.
func assertClean(t *testing.T, root int, mark, word string) {
	t.Helper()
	if left := leftovers(root, mark, word, false); len(left) > 0 {
		t.Errorf("processes left behind:\n%v", left)
	}
}

// assertAlone is assertClean plus no zombie child of the test process at
// all, for tests that do not run in parallel.
func assertAlone(t *testing.T, root int, mark, word string) {
	t.Helper()
	if left := leftovers(root, mark, word, true); len(left) > 0 {
		t.Errorf("processes left behind:\n%v", left)
	}
}

// waitExited polls until background process id has exited.
func waitExited(t *testing.T, m *process.Manager, id string) protocol.ProcessInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range m.List().Processes {
			if p.ID == id && !p.Running {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %s still running after 10s", id)
	return protocol.ProcessInfo{}
}

// codeOf returns the protocol code of err, or "" for nil.
func codeOf(err error) protocol.Code {
	if err == nil {
		return ""
	}
	return protocol.CodeOf(err)
}

// waitOutput polls until background process id's stdout is want.
func waitOutput(t *testing.T, m *process.Manager, id, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := m.Output(t.Context(), protocol.ProcessOutputRequest{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Stdout) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stdout of %s = %q, want %q", id, out.Stdout, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
