package process

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/internal/sysfile"
)

// procStat is what the tree sweep needs from /proc/<pid>/stat. Zombies
// keep their stat (with state 'Z') until reaped; their environ is empty.
type procStat struct {
	pid   int
	ppid  int
	pgrp  int
	sid   int
	state byte
	start uint64 // clock ticks after boot; with pid, names one process
}

func (p procStat) zombie() bool { return p.state == 'Z' || p.state == 'X' }

// readStat parses /proc/<pid>/stat. The command name is in parentheses
// and may itself contain spaces and parentheses, so fields are counted
// from the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := sysfile.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state) of proc(5); starttime is field 22.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	p := procStat{pid: pid, state: f[0][0]}
	nums := []*int{&p.ppid, &p.pgrp, &p.sid}
	for k, dst := range nums {
		if *dst, err = strconv.Atoi(f[1+k]); err != nil {
			return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
	}
	if p.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return p, nil
}

// scanProcs returns the processes visible in /proc that a tree could
// count as a member or the reaper as an orphan: every one but pid 1 (the
// namespace's init, started before the runner, or the runner itself),
// the runner and the live trees' roots, which tree.members and
// reapOrphans pass over whatever their stat says. Leaving those out
// before reading their stat is what keeps a sweep cheap while other
// calls run: a sandbox's processes are then mostly those calls' roots
// (often a shell running a builtin and nothing else), so a sweep reads
// no stat at all instead of one per running call, and every call ends
// with a sweep and, on its SIGCHLD, a scan for orphans.
//
// A root left out here is still registered, so its pid is still its own
// (a zombie keeps it until its owner reaps it, and then unregisters it):
// a new process could take it over only after the reap and before the
// unregistering, once the kernel's pid counter has wrapped round.
// Processes that exit while the scan runs are skipped; the sweep repeats
// until a pass finds nothing, so a process missed by one pass is caught
// by the next.
func scanProcs() []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]procStat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == 1 || pid == self || reg.isRoot(pid) {
			continue
		}
		if p, err := readStat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// envValue returns the value of key in the environment pid was started
// with. A process may overwrite that memory, and a zombie's environment
// reads as empty.
func envValue(pid int, key string) (string, bool) {
	b, err := sysfile.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	prefix := []byte(key + "=")
	for len(b) > 0 {
		entry, rest, _ := bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			return string(v), true
		}
		b = rest
	}
	return "", false
}

// envEmptyOrGone reports whether pid's environment reads as empty (it
// does for a moment during exec, and always after the environment was
// cleared) or pid is gone.
func envEmptyOrGone(pid int) bool {
	b, err := sysfile.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return len(b) == 0 && (err == nil || os.IsNotExist(err))
}

// lastPid returns the last pid the kernel gave out in the runner's pid
// namespace (/proc/sys/kernel/ns_last_pid), or false where that cannot
// be read (gVisor has no such file): callers then assume anything may
// have been created. Setting it, or choosing a new process's pid with
// clone3's set_tid, takes CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE over
// the namespace, which nothing in a sandbox has. The file stays open:
// read again from offset 0 it says the value of the moment, one system
// call instead of four.
func lastPid() (int, bool) {
	fd, err := nsLastPid()
	if err != nil {
		return 0, false
	}
	var b [24]byte
	n, err := unix.Pread(fd, b[:], 0)
	for err == unix.EINTR {
		n, err = unix.Pread(fd, b[:], 0)
	}
	if err != nil || n <= 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid, err == nil && pid > 0
}

// nsLastPid is /proc/sys/kernel/ns_last_pid, open for the runner's
// lifetime.
var nsLastPid = sync.OnceValues(func() (int, error) {
	return unix.Open("/proc/sys/kernel/ns_last_pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
})
