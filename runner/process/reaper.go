package process

import (
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// orphanGrace is how long a zombie child of the runner that no tree claims
// is left alone before the reaper reaps it. Such a zombie is either an
// orphan the runner adopted as subreaper (a descendant of something another
// package started, or of a call that is already over) or a direct child of
// another package whose exec.Cmd.Wait has not run yet; the grace leaves
// the latter to its owner.
const orphanGrace = 10 * time.Second

// reapInterval is how often the reaper looks for zombies when no SIGCHLD
// arrives; it is what ends a grace period.
const reapInterval = 5 * time.Second

var (
	selfSid, _ = unix.Getsid(0)
	selfPgrp   = unix.Getpgrp()
)

// registry knows every live tree of every Manager in the process. It is
// process-wide because what it guards is: the runner is one subreaper,
// and an orphan may come from any Manager's call.
type registry struct {
	once    sync.Once
	mu      sync.Mutex
	byRoot  map[int]*tree
	byID    map[string]*tree
	zombies map[procStat]time.Time // unclaimed zombie children: first seen

	// quietAt is the last pid the namespace gave out (lastPid) at a
	// moment when it held nothing the reaper cares about, or -1 when no
	// such moment is known. It is set by a scan that found nothing but
	// pid 1, the runner and live roots, and moved on by every root
	// spawned while it was the last pid, when that root's pid is provably
	// the only one given out since. While the namespace's last pid is
	// still quietAt, the namespace holds only such processes, a SIGCHLD
	// can only be a root's, which its owner reaps, and the reaper does
	// not scan /proc for it: the scan a call would otherwise cost.
	quietAt int
}

var reg = &registry{
	byRoot:  make(map[int]*tree),
	byID:    make(map[string]*tree),
	zombies: make(map[procStat]time.Time),
	quietAt: -1,
}

// start makes the runner a child subreaper, so that the orphans of every
// call are re-parented to it instead of escaping to init, and starts the
// reaper goroutine that reaps them. Both last for the process's lifetime.
func (r *registry) start(log *slog.Logger) {
	r.once.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			log.Warn("become child subreaper; orphans of calls will escape to init", "error", err)
		}
		sigc := make(chan os.Signal, 1)
		signal.Notify(sigc, unix.SIGCHLD)
		go r.loop(sigc)
	})
}

func (r *registry) remove(t *tree) {
	r.mu.Lock()
	delete(r.byRoot, t.root)
	delete(r.byID, t.id)
	r.mu.Unlock()
}

func (r *registry) isRoot(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byRoot[pid] != nil
}

// owner returns the live tree that p belongs to by session, group,
// marker or earlier sighting (rules 1 and 3 of tree), or nil; envEmpty
// reports that p's environment read as empty, so that the marker could not
// be checked. The marker wins over an earlier sighting.
func (r *registry) owner(p procStat) (t *tree, envEmpty bool) {
	r.mu.Lock()
	t = r.byRoot[p.sid]
	if t == nil {
		t = r.byRoot[p.pgrp]
	}
	r.mu.Unlock()
	if t != nil {
		return t, false
	}
	if !p.zombie() {
		id, ok := envValue(p.pid, markerVar)
		r.mu.Lock()
		t = r.byID[id]
		r.mu.Unlock()
		if ok && t != nil {
			return t, false
		}
		envEmpty = !ok && envEmptyOrGone(p.pid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.byRoot {
		if c.knows(p) {
			return c, false
		}
	}
	return nil, envEmpty
}

// firstCandidate reports whether t is the only live tree that could have
// started p, an unclaimed adopted process: no other tree's root started
// before p did.
func (r *registry) firstCandidate(t *tree, p procStat) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.byRoot {
		if c != t && c.start() <= p.start {
			return false
		}
	}
	return true
}

func (r *registry) loop(sigc <-chan os.Signal) {
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		select {
		case <-sigc:
			if r.quiet() {
				continue
			}
		case <-tick.C:
		}
		r.reapOrphans(time.Now())
	}
}

// reapOrphans reaps the runner's zombie children that are not a tree's
// root (those are reaped by their owner, after the sweep): at once when a
// live tree claims them, adding their rusage to it; after orphanGrace
// otherwise. Live adopted children are remembered by the tree that claims
// them, so that their zombies can be attributed once the environment is
// gone.
func (r *registry) reapOrphans(now time.Time) {
	// Read before the scan: a process made after it is either in the
	// scan or has moved the last pid on.
	last, lastOK := lastPid()
	procs := scanProcs()
	seen := make(map[procStat]bool)
	for _, p := range procs {
		if p.ppid != self || r.isRoot(p.pid) {
			continue
		}
		t, _ := r.owner(p)
		switch {
		case !p.zombie():
			if t != nil {
				t.remember(p)
			}
		case t != nil:
			if ru, ok := reapZombie(p); ok {
				t.account(p, ru)
			}
		default:
			seen[p] = true
			r.mu.Lock()
			first, ok := r.zombies[p]
			if !ok {
				r.zombies[p] = now
			}
			r.mu.Unlock()
			if ok && now.Sub(first) >= orphanGrace {
				reapZombie(p)
			}
		}
	}
	r.mu.Lock()
	for p := range r.zombies {
		if !seen[p] {
			delete(r.zombies, p)
		}
	}
	r.quietAt = -1
	if lastOK && len(procs) == 0 {
		r.quietAt = last
	}
	r.mu.Unlock()
}

// spawn runs fork (which starts a session leader) and registers its tree
// under the registry's lock, so that no sweep or reaper can see the new
// process as an unclaimed adoptee between the fork and the registration.
func (r *registry) spawn(id string, fork func() (int, error)) (*tree, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before, _ := r.quietLast()
	pid, err := fork()
	r.keepQuiet(before, pid, err)
	if err != nil {
		return nil, err
	}
	t := &tree{id: id, root: pid, known: make(map[int]uint64), start: rootStart(pid)}
	r.byRoot[pid] = t
	r.byID[id] = t
	return t, nil
}

// quiet reports whether the namespace still holds nothing the reaper
// cares about (see quietAt).
func (r *registry) quiet() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.quietLast()
	return ok && last == r.quietAt
}

// quietLast returns lastPid, or false when quietAt is unknown.
func (r *registry) quietLast() (int, bool) {
	if r.quietAt < 0 {
		return 0, false
	}
	return lastPid()
}

// keepQuiet moves quietAt on to pid, a root just forked when the last pid
// was before, if pid is provably the only pid given out since quietAt:
// the last pid was quietAt before the fork, pid follows it directly (no
// other process took one in between), and it is still the last. Anything
// else, a failed fork included, forgets quietAt until the next scan.
// Called with r.mu held.
func (r *registry) keepQuiet(before, pid int, forkErr error) {
	if r.quietAt < 0 {
		return
	}
	after, ok := lastPid()
	if forkErr == nil && ok && before == r.quietAt && pid == before+1 && after == pid {
		r.quietAt = pid
		return
	}
	r.quietAt = -1
}

// rootStart returns a tree's start function for the root pid.
func rootStart(pid int) func() uint64 {
	return sync.OnceValue(func() uint64 {
		st, err := readStat(pid)
		if err != nil {
			return 0
		}
		return st.start
	})
}
