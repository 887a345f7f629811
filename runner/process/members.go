package process

// undecidedPasses is how many sweep passes an adopted process whose
// environment reads as empty stays undecided before rule 4 applies: the
// environment of a process reads as empty for a moment during exec.
const undecidedPasses = 3

// members returns the processes of procs that belong to t (see tree),
// excluding the root, the runner and every live tree's root, and the
// number of adopted processes it could not decide about yet. pass is the
// sweep's pass number; a negative pass means "not sweeping": only the
// exact rules 1-3 apply, as for Signal.
func (t *tree) members(procs []procStat, pass int) (out []procStat, undecided int) {
	children := make(map[int][]procStat)
	in := make(map[int]bool)   // found, by any rule
	sure := make(map[int]bool) // found by rules 1-3, not guessed
	add := func(p procStat, exact bool) {
		if in[p.pid] || p.pid == self || p.pid == t.root || reg.isRoot(p.pid) {
			return
		}
		in[p.pid], sure[p.pid] = true, exact
		out = append(out, p)
	}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
		switch {
		case p.sid == t.root || p.pgrp == t.root || t.knows(p): // rule 1, or seen before
			add(p, true)
		case p.ppid == self: // rules 3 and 4
			owner, envEmpty := reg.owner(p)
			switch {
			case owner == t:
				add(p, true)
			case owner != nil || pass < 0 || !t.adoptable(p):
			case envEmpty && !p.zombie() && pass < undecidedPasses:
				undecided++
			case reg.firstCandidate(t, p):
				add(p, false)
			}
		case !p.zombie():
			if id, ok := envValue(p.pid, markerVar); ok && id == t.id { // rule 3
				add(p, true)
			}
		}
	}
	// Rule 2: descendants of the root and of every member found so far,
	// as sure as their parent.
	for _, c := range children[t.root] {
		add(c, true)
	}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i].pid] {
			add(c, sure[out[i].pid])
		}
	}
	t.learn(procs, out, sure)
	return out, undecided
}

// learn remembers the live members found by rules 1-3 outside the root's
// session, whose zombies could not be attributed otherwise, and forgets
// remembered processes that are gone, so known stays bounded. Guesses are
// never remembered: a remembered process counts as t's for every other
// tree too.
func (t *tree) learn(procs, members []procStat, sure map[int]bool) {
	alive := make(map[int]uint64, len(procs))
	for _, p := range procs {
		alive[p.pid] = p.start
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for pid, start := range t.known {
		if s, ok := alive[pid]; !ok || s != start {
			delete(t.known, pid)
		}
	}
	for _, p := range members {
		if sure[p.pid] && p.sid != t.root && !p.zombie() {
			t.known[p.pid] = p.start
		}
	}
}

// adoptable reports whether an adopted process nobody claims may be t's
// (rule 4): not in the runner's session or group, and started after t.
func (t *tree) adoptable(p procStat) bool {
	return p.sid != selfSid && p.pgrp != selfPgrp && p.start >= t.start()
}
