package process

import (
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// markerVar is set on every call's root, so every process it starts
// inherits it unless it clears its environment.
const markerVar = "SANDGATE_CALL"

// maxPasses bounds the sweep. A pass that finds nothing ends it; a fork
// loop racing the kills is what would use them all up.
const maxPasses = 50

// tree is the set of processes one call (a foreground Run or a background
// Start) started: its root, a direct child of the runner that leads its
// own session and process group, and everything that descends from it.
//
// A process belongs to the tree when one of these finds it (members):
//
//  1. session or process group equal to the root's pid. The root is a
//     session leader, sessions cannot be joined, so this is exact, and it
//     catches everything that did not call setsid, including double forks
//     and nohup (which only ignores SIGHUP), whether still below the root
//     or already re-parented to the runner.
//  2. a parent chain through /proc/<pid>/stat leading to the root or to a
//     member: catches children that called setsid while their parent is
//     still alive.
//  3. the marker SANDGATE_CALL=<id> in /proc/<pid>/environ: catches setsid
//     children whose parent has exited (daemons), wherever they were
//     re-parented.
//  4. adopted by the runner (parent is the runner, the child subreaper),
//     claimed by no live tree through 1-3 (an environment that reads as
//     empty is given a few passes first: it does during an exec), not a
//     root, not in the runner's own session (where other packages' os/exec
//     children live), started after this root and after no other live
//     root: catches a daemon that also cleared or rewrote its environment.
//     Only the sweep uses it; Signal delivers to 1-3 only.
//
// What escapes: a daemon (setsid and orphaned) that cleared its
// environment while another call that started before it is still running
// (rule 4 cannot tell whose it is), and a process that changed its uid
// (a setuid binary), which the runner may not signal anyway. Processes
// cannot leave the runner's subtree, because the runner is a child
// subreaper. The container's cgroup (its pids limit, and its removal at
// session end) is the backstop.
//
// Rule 4 also matches a process another package of the runner started
// with its own session during this call; such packages must not start
// processes with Setsid while calls run, or must accept that risk.
type tree struct {
	id   string // the marker's value
	root int
	// start returns the root's start time (see rule 4), read from /proc
	// the first time rule 4 needs it: most calls end without, and until
	// the tree is unregistered its root, reaped last, is still there to
	// read. 0 when it could not be read, as if it started at boot.
	start func() uint64

	mu     sync.Mutex
	known  map[int]uint64 // members seen alive outside the root's session: pid → start
	cpu    time.Duration  // user+system time of members the runner reaped
	maxRSS int64          // largest max RSS among them, bytes
}

// remember records p as a member so that it is still attributed to t
// after it dies, when its environment can no longer be read.
func (t *tree) remember(p procStat) {
	t.mu.Lock()
	t.known[p.pid] = p.start
	t.mu.Unlock()
}

func (t *tree) knows(p procStat) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	start, ok := t.known[p.pid]
	return ok && start == p.start
}

// account adds the rusage of p, a member the runner reaped, and forgets p.
func (t *tree) account(p procStat, ru unix.Rusage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.known, p.pid)
	t.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	t.maxRSS = max(t.maxRSS, ru.Maxrss*1024)
}

// sweep kills every member of t with SIGKILL and reaps those that become
// the runner's zombies, pass after pass, until a pass finds nothing left.
// The root is not touched beyond the group kill: its owner reaps it after
// the sweep. It reports whether the tree is gone.
func (t *tree) sweep(log *slog.Logger) bool {
	if t.alone() {
		return true
	}
	backoff := time.Millisecond
	for pass := 0; pass < maxPasses; pass++ {
		killGroup(t.root, unix.SIGKILL)
		ms, undecided := t.members(scanProcs(), pass)
		isMember := make(map[int]bool, len(ms))
		for _, m := range ms {
			isMember[m.pid] = true
		}
		pending := undecided
		for _, m := range ms {
			switch {
			case !m.zombie():
				signalVerified(m, unix.SIGKILL)
				pending++
			case m.ppid == self:
				if ru, ok := reapZombie(m); ok {
					t.account(m, ru)
				} else {
					pending++
				}
			case isMember[m.ppid] || m.ppid == t.root:
				pending++ // re-parented to the runner once its parent dies
			}
		}
		if pending == 0 {
			return true
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 20*time.Millisecond)
	}
	log.Warn("process tree still alive after sweep", "call_id", t.id, "pid", t.root, "passes", maxPasses)
	return false
}

// alone reports whether the root, which has exited, is provably all
// there ever was of t: no pid has been given out in the runner's pid
// namespace since the root's. Every other member would be a process
// created after the root, with a pid of its own, and while the root's
// zombie holds its pid no new process can take it. Most short commands
// (a shell running a builtin, or executing one program in its place) are
// alone, and their sweep needs no look at /proc.
func (t *tree) alone() bool {
	last, ok := lastPid()
	return ok && last == t.root
}
