package interp

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

//go:embed driver.py
var driverSource []byte

// oomScoreAdj makes the kernel pick the interpreter over the runner when
// the container reaches its memory limit, as runner/process does for
// every call.
const oomScoreAdj = "500"

// drainWait bounds how long the output of an interpreter that ended is
// read before its pipes are closed: a process that escaped its group
// (setsid) may hold them open for ever.
const drainWait = 500 * time.Millisecond

// interp is one running python3 with the driver. Only the holder of the
// Manager's turn uses it, except for the goroutines that read its pipes
// and wait for it.
//
// It leads its own process group, so that killing it kills what its cells
// started, but stays in the runner's session: runner/process sweeps
// adopted processes outside the runner's session (its tree rule 4), and
// the interpreter must never be mistaken for a call's daemon. The runner
// is a child subreaper that reaps unclaimed zombie children after a grace;
// wait reaps the interpreter as soon as it exits, well within it.
type interp struct {
	cmd      *exec.Cmd
	pid      int
	requests *os.File    // fd 3's write end
	replies  chan []byte // lines of fd 4; closed at its end
	stdout   *capture
	stderr   *capture
	files    []*os.File    // the runner's ends of the pipes
	stop     chan struct{} // closed by release
	cells    int
	// before is a cgroup reading taken while the interpreter was known
	// to be alive, the baseline that tells an OOM kill (see exitReason).
	before cgroup.Snapshot

	mu     sync.Mutex // makes signalling and reaping exclusive: a signal never reaches a reused pid
	exited bool       // seen exiting; may be reaped from now on
	killed bool       // the runner killed it
	done   chan struct{}
	status syscall.WaitStatus // valid once done is closed, when reaped is true
	reaped bool
}

// start starts python and waits for the driver's greeting.
func (m *Manager) start(ctx context.Context) (*interp, error) {
	driver, err := writeDriver()
	if err != nil {
		return nil, err
	}
	defer os.Remove(driver) // python has read it once it greets
	mpl, err := m.matplotlibDir()
	if err != nil {
		return nil, err
	}
	// The runner's ends and the child's: requests (fd 3), replies (fd 4),
	// stdout, stderr.
	var ours, theirs [4]*os.File
	for i := range ours {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ours[:i], theirs[:i])
			return nil, fmt.Errorf("create interpreter pipes: %w", err)
		}
		if i == 0 {
			ours[i], theirs[i] = w, r // the runner writes requests
		} else {
			ours[i], theirs[i] = r, w
		}
	}
	defer closeAll(theirs[:]) // the child has its own copies once started
	ip := &interp{
		requests: ours[0],
		replies:  make(chan []byte),
		stdout:   newCapture(protocol.DefaultOutputCap),
		stderr:   newCapture(protocol.DefaultOutputCap),
		files:    ours[:],
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	ip.cmd = exec.Command(m.python, "-u", driver)
	ip.cmd.Dir = m.opts.Workspace
	ip.cmd.Env = append(append([]string(nil), m.opts.BaseEnv...),
		"PYTHONUNBUFFERED=1", "MPLBACKEND=Agg", "MPLCONFIGDIR="+mpl)
	ip.cmd.Stdout, ip.cmd.Stderr = theirs[2], theirs[3]
	ip.cmd.ExtraFiles = theirs[:2] // fd 3 and fd 4
	ip.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Cells are user code: the interpreter runs niced, like every process
	// a call starts (see process.UserNice).
	if err := process.StartAsUser(ip.cmd.Start); err != nil {
		closeAll(ip.files)
		if errors.Is(err, unix.EAGAIN) {
			return nil, protocol.Errorf(protocol.CodeUnavailable, "start the python interpreter: the sandbox's process limit is reached: end some background processes")
		}
		return nil, fmt.Errorf("start the python interpreter %s: %w", m.python, err)
	}
	ip.pid = ip.cmd.Process.Pid
	_ = os.WriteFile("/proc/"+strconv.Itoa(ip.pid)+"/oom_score_adj", []byte(oomScoreAdj), 0)
	go ip.wait(m)
	go ip.stdout.run(ours[2])
	go ip.stderr.run(ours[3])
	go func() {
		if err := readReplies(ours[1], ip.replies, ip.stop); errors.Is(err, errReplyTooLong) {
			m.log.Warn("interpreter wrote an oversized control line; it will be replaced", "pid", ip.pid)
		}
	}()
	if err := m.greet(ctx, ip); err != nil {
		ip.kill(m)
		ip.release()
		return nil, err
	}
	ip.before = m.opts.Accounting.OOMKills()
	return ip, nil
}

// greet waits for the driver's first line.
func (m *Manager) greet(ctx context.Context, ip *interp) error {
	t := time.NewTimer(m.opts.StartTimeout)
	defer t.Stop()
	select {
	case line, ok := <-ip.replies:
		var r reply
		if ok && json.Unmarshal(line, &r) == nil && r.Ready {
			return nil
		}
		ip.kill(m)
		return fmt.Errorf("start the python interpreter: it ended (%s) before it was ready%s", m.exitReason(ip), ip.stderrTail())
	case <-t.C:
		return fmt.Errorf("start the python interpreter: not ready after %s", m.opts.StartTimeout)
	case <-ctx.Done():
		return protocol.Errorf(protocol.CodeCanceled, "canceled while starting the python interpreter")
	}
}

// stderrTail returns what the interpreter wrote to stderr, for an error
// message: ": ..." or "".
func (ip *interp) stderrTail() string {
	ip.drain()
	out := ip.stderr.take()
	if len(out.data) == 0 {
		return ""
	}
	return ": " + cutBytes(string(out.data), 2000)
}

// wait reaps the interpreter as soon as it exits. Before reaping, while
// the zombie still holds the pid and so the group id, it kills the rest
// of the interpreter's group: whatever its cells started dies with it.
func (ip *interp) wait(m *Manager) {
	defer close(ip.done)
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, ip.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil || !errors.Is(err, unix.EINTR) {
			if err != nil {
				m.log.Warn("wait for the interpreter", "pid", ip.pid, "error", err)
			}
			break
		}
	}
	ip.mu.Lock()
	ip.exited = true
	_ = unix.Kill(-ip.pid, unix.SIGKILL)
	ip.mu.Unlock()
	_ = ip.cmd.Wait() // a non-zero exit is an error here, not news
	if ps := ip.cmd.ProcessState; ps != nil {
		ip.status, ip.reaped = ps.Sys().(syscall.WaitStatus), true
	}
}

// interrupt sends SIGINT to the interpreter (not its group: a background
// server a cell started is not the cell).
func (ip *interp) interrupt() {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if !ip.exited {
		_ = unix.Kill(ip.pid, unix.SIGINT)
	}
}

// kill kills the interpreter's group and waits until the interpreter is
// reaped.
func (ip *interp) kill(m *Manager) {
	ip.mu.Lock()
	if !ip.exited {
		ip.killed = true
		_ = unix.Kill(-ip.pid, unix.SIGKILL)
	}
	ip.mu.Unlock()
	select {
	case <-ip.done:
	case <-time.After(10 * time.Second):
		m.log.Warn("interpreter not reaped 10s after SIGKILL", "pid", ip.pid)
	}
}

// hasExited reports whether the interpreter has exited; when it has, it
// returns once the interpreter is reaped.
func (ip *interp) hasExited() bool {
	ip.mu.Lock()
	exited := ip.exited
	ip.mu.Unlock()
	if exited {
		<-ip.done
	}
	return exited
}

func (ip *interp) wasKilled() bool {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	return ip.killed
}

// drain waits (briefly) until both output pipes are at their end, so
// that the output of an interpreter that ended is complete.
func (ip *interp) drain() {
	t := time.NewTimer(drainWait)
	defer t.Stop()
	for _, c := range []*capture{ip.stdout, ip.stderr} {
		select {
		case <-c.eof:
		case <-t.C:
			return
		}
	}
}

// release closes the runner's ends of the pipes and ends the reading
// goroutines. The interpreter must be reaped already.
func (ip *interp) release() {
	close(ip.stop)
	closeAll(ip.files)
}

func closeAll(sets ...[]*os.File) {
	for _, files := range sets {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
}

// writeDriver writes the embedded driver to a new file under os.TempDir
// (the root file system is read-only; /tmp is not).
func writeDriver() (string, error) {
	f, err := os.CreateTemp("", "sandgate-interp-*.py")
	if err != nil {
		return "", fmt.Errorf("create interpreter driver file: %w", err)
	}
	_, err = f.Write(driverSource)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write interpreter driver %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}
