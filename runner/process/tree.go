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
//  4. adopted by the runner (parent is the runner, the child subreaper) and
//     claimed by no other live tree through 1-3, not a root, not in the
//     runner's own session (where other packages' os/exec children live),
//     and started after this root: catches a daemon that also cleared or
//     rewrote its environment.
//
// What escapes: a process that calls setsid, clears its environment and
// escapes the runner's subtree, which only a process that changes uid can
// (a setuid binary; the runner may not kill it anyway), and a zombie whose
// parent escaped. Processes are never re-parented out of the runner's
// subtree because the runner is a child subreaper. The container's cgroup
// (its pids limit, and its removal at session end) is the backstop.
type tree struct {
	id    string // the marker's value
	root  int
	start uint64 // the root's start time; see rule 4

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

// members returns the processes of procs that belong to t (see the type's
// comment), excluding the root and the runner.
func (t *tree) members(procs []procStat) []procStat {
	children := make(map[int][]procStat)
	in := make(map[int]bool)
	var out []procStat
	add := func(p procStat) {
		if in[p.pid] || p.pid == self || p.pid == t.root || reg.isRoot(p.pid) {
			return
		}
		in[p.pid] = true
		out = append(out, p)
	}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
		switch {
		case p.sid == t.root || p.pgrp == t.root || t.knows(p): // rule 1, or seen before
			add(p)
		case p.ppid == self: // rules 3 and 4
			if owner := reg.owner(p); owner == t || owner == nil && t.adoptable(p) {
				add(p)
			}
		case !p.zombie():
			if id, ok := envValue(p.pid, markerVar); ok && id == t.id { // rule 3
				add(p)
			}
		}
	}
	// Rule 2: descendants of the root and of every member found so far.
	for _, c := range children[t.root] {
		add(c)
	}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i].pid] {
			add(c)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Keep known bounded: forget processes that are gone, and remember
	// live members outside the root's session.
	alive := make(map[int]uint64, len(procs))
	for _, p := range procs {
		alive[p.pid] = p.start
	}
	for pid, start := range t.known {
		if s, ok := alive[pid]; !ok || s != start {
			delete(t.known, pid)
		}
	}
	for _, p := range out {
		if p.sid != t.root && !p.zombie() {
			t.known[p.pid] = p.start
		}
	}
	return out
}

// adoptable reports whether an adopted process nobody claims may be t's
// (rule 4).
func (t *tree) adoptable(p procStat) bool {
	return p.sid != selfSid && p.pgrp != selfPgrp && p.start >= t.start
}

// sweep kills every member of t with SIGKILL and reaps those that become
// the runner's zombies, pass after pass, until a pass finds nothing left.
// The root is not touched beyond the group kill: its owner reaps it after
// the sweep. It reports whether the tree is gone.
func (t *tree) sweep(log *slog.Logger) bool {
	backoff := time.Millisecond
	for pass := 0; pass < maxPasses; pass++ {
		killGroup(t.root, unix.SIGKILL)
		ms := t.members(scanProcs())
		isMember := make(map[int]bool, len(ms))
		for _, m := range ms {
			isMember[m.pid] = true
		}
		pending := 0
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
