package process

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// oomScoreAdj is written to every root so that, when the container reaches
// its memory limit, the kernel kills the call's processes (which inherit
// the value) before the runner. Raising the value needs no privilege.
const oomScoreAdj = "500"

// command is a validated request, ready to start.
type command struct {
	path    string   // executable, resolved in the child's PATH
	argv    []string // argv[0] as given
	dir     string   // resolved working directory
	env     []string // including the marker
	id      string   // the marker's value
	display string   // what ProcessInfo.Command shows
	shell   bool     // started from a command string, not from argv
	tag     string   // ExecRequest.Tag
}

// prepare validates req and resolves what starting it needs. Errors are
// *protocol.Error.
func (m *Manager) prepare(req protocol.ExecRequest) (command, error) {
	c := command{id: randomID(8), tag: req.Tag}
	switch {
	case req.Command != "" && len(req.Argv) > 0, req.Command == "" && len(req.Argv) == 0:
		return c, protocol.Errorf(protocol.CodeInvalid, "give exactly one of command (run by /bin/sh -c) or argv")
	case req.Command != "":
		c.argv = []string{"/bin/sh", "-c", req.Command}
		c.display = req.Command
		c.shell = true
	default:
		c.argv = req.Argv
		c.display = strings.Join(req.Argv, " ")
	}
	for _, a := range c.argv {
		if strings.ContainsRune(a, 0) {
			return c, protocol.Errorf(protocol.CodeInvalid, "command and arguments must not contain NUL bytes")
		}
	}
	var err error
	if c.dir, err = m.workdir(req.Cwd); err != nil {
		return c, err
	}
	if c.env, err = environ(m.opts.BaseEnv, req.Env, c.id); err != nil {
		return c, err
	}
	if c.path, err = lookPath(c.argv[0], c.dir, c.env); err != nil {
		return c, err
	}
	return c, nil
}

// proc is a started root process and the runner's ends of its pipes.
type proc struct {
	t       *tree
	pid     int
	mu      sync.Mutex // held while reaping the root, so signal never outlives the pid
	reaped  bool
	stdin   *os.File // write end; nil when stdin is /dev/null
	stdout  *os.File // read end
	stderr  *os.File // read end
	started time.Time
}

// spawn starts c as the leader of a new session (and so of a new process
// group whose id is its pid) and registers its tree. Output goes to pipes
// whose read ends the caller owns: not exec.Cmd with an io.Writer, whose
// Wait would block until every process holding the pipe has exited.
//
// A call's start is mostly system calls, and in a sandbox (seccomp checks
// each) on a VM they cost more than elsewhere, so this makes some 20
// fewer than os.Pipe and os.Open would: the child's ends of the pipes
// are plain descriptors that never enter Go's poller, /dev/null is
// opened once, /proc files are written without os.File.
func spawn(c command, withStdin bool) (_ *proc, retErr error) {
	p := &proc{}
	childIn, childOut, childErr := -1, -1, -1
	defer func() {
		for _, fd := range []int{childIn, childOut, childErr} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		if retErr != nil {
			p.closeAll()
		}
	}()
	var err error
	if p.stdout, childOut, err = pipe(true); err != nil {
		return nil, fmt.Errorf("create stdout pipe: %w", err)
	}
	if p.stderr, childErr, err = pipe(true); err != nil {
		return nil, fmt.Errorf("create stderr pipe: %w", err)
	}
	stdin := -1
	if withStdin {
		p.stdin, childIn, err = pipe(false)
		stdin = childIn
	} else {
		stdin, err = devNull() // shared: not the deferred close's
	}
	if err != nil {
		return nil, fmt.Errorf("create stdin: %w", err)
	}
	attr := &syscall.ProcAttr{
		Dir:   c.dir,
		Env:   c.env,
		Files: []uintptr{uintptr(stdin), uintptr(childOut), uintptr(childErr)},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}
	resetPeakRSS()
	p.started = time.Now()
	p.t, err = reg.spawn(c.id, func() (pid int, err error) {
		err = StartAsUser(func() (err error) {
			pid, err = syscall.ForkExec(c.path, c.argv, attr)
			return err
		})
		return pid, err
	})
	if err != nil {
		return nil, startError(c.argv[0], err)
	}
	p.pid = p.t.root
	setOOMScoreAdj(p.pid)
	return p, nil
}

// pipe returns a pipe's two ends: the runner's as an *os.File in Go's
// poller, reading when runnerReads, and the child's as a blocking
// descriptor to hand to the child and close. Both are close-on-exec;
// ForkExec dups the child's to 0, 1 or 2, which are not.
func pipe(runnerReads bool) (runnerEnd *os.File, childEnd int, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	mine, theirs := fds[0], fds[1]
	if !runnerReads {
		mine, theirs = theirs, mine
	}
	// Non-blocking, NewFile puts it in the poller.
	if err := unix.SetNonblock(mine, true); err != nil {
		unix.Close(mine)
		unix.Close(theirs)
		return nil, -1, err
	}
	return os.NewFile(uintptr(mine), "|"+strconv.Itoa(mine)), theirs, nil
}

// devNull opens /dev/null once for the runner's lifetime, as the stdin
// of every call that has none. Never closed.
var devNull = sync.OnceValues(func() (int, error) {
	return unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
})

// setOOMScoreAdj gives pid oomScoreAdj; a failure leaves it the runner's.
func setOOMScoreAdj(pid int) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_, _ = unix.Write(fd, []byte(oomScoreAdj))
	unix.Close(fd)
}

// resetPeakRSS lowers the runner's own peak RSS to its current RSS.
// syscall.ForkExec starts the child with vfork (CLONE_VM), and at exec the
// kernel folds the peak RSS of the memory the child shared, the runner's,
// into the child's max RSS; without the reset every call's MemoryPeakBytes
// would be at least the runner's largest size ever. What remains is the
// runner's current RSS as a floor under the root's figure.
func resetPeakRSS() {
	peakReset.once.Do(openPeakReset)
	if peakReset.fd >= 0 {
		_, _ = unix.Write(peakReset.fd, []byte("5"))
	}
}

// peakReset is /proc/self/clear_refs, open for writing.
var peakReset = struct {
	once sync.Once
	fd   int
}{fd: -1}

// OpenPeakReset opens /proc/self/clear_refs, through which each call
// resets the runner's peak RSS. Call it before the runner makes itself
// non-dumpable: the kernel then gives the process's /proc files to root,
// and the runner, not root, could open it no more. A write to a file
// opened before is not checked again.
func OpenPeakReset() { peakReset.once.Do(openPeakReset) }

func openPeakReset() {
	if fd, err := unix.Open("/proc/self/clear_refs", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		peakReset.fd = fd
	}
}

// closeAll closes the runner's ends of the pipes.
func (p *proc) closeAll() {
	for _, f := range []*os.File{p.stdin, p.stdout, p.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

func startError(name string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EACCES), errors.Is(err, unix.EISDIR):
		return execError(name, err)
	case errors.Is(err, unix.ENOEXEC):
		return protocol.Errorf(protocol.CodeInvalid, "%s is not in an executable format; run it through an interpreter", name)
	case errors.Is(err, unix.E2BIG):
		return protocol.Errorf(protocol.CodeTooLarge, "arguments and environment are too large for exec")
	case errors.Is(err, unix.EAGAIN):
		return protocol.Errorf(protocol.CodeUnavailable, "start %s: the sandbox's process limit is reached: end some background processes", name)
	}
	return fmt.Errorf("start %s: %w", name, err)
}

// randomID returns n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
