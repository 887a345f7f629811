package cgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"

	"github.com/sandgate/sandgate/runner/internal/sysfile"
)

// ErrUnavailable reports that no cgroup of the runner could be read.
var ErrUnavailable = errors.New("no readable cgroup")

// unlimited is the threshold above which a limit file means "no limit":
// v1 reports PAGE_COUNTER_MAX (about 2^63) and v2 "max" (read as 2^64-1).
const unlimited = 1 << 62

// Snapshot is one reading of the runner's cgroup. A zero field means the
// value is unknown (or, for limits, that there is no limit).
type Snapshot struct {
	Version        int   // 1 or 2; 0 when no cgroup was read
	CPUUsageNs     int64 // CPU time used by every process in the group
	MemoryUsage    int64 // bytes charged now (v1 usage_in_bytes, v2 memory.current)
	MemoryCache    int64 // of MemoryUsage, the page cache, tmpfs included (v1 total_cache, v2 memory.stat file)
	MemoryMaxUsage int64 // high-water mark (v1 max_usage_in_bytes, v2 memory.peak)
	MemoryLimit    int64 // memory limit in bytes
	OOMKills       int64 // processes the kernel killed for reaching MemoryLimit
	// HasOOMKills reports whether the kernel exposes the OOM kill counter
	// (v1 memory.oom_control "oom_kill" since Linux 4.13, v2 memory.events),
	// so that an unchanged OOMKills of 0 means "no OOM kill".
	HasOOMKills bool
	PidsCurrent int64
	PidsLimit   int64
}

// reader reads one cgroup version's files.
type reader interface {
	snapshot() (Snapshot, error)
	// oomKills reads only the OOM kill counter.
	oomKills() (Snapshot, error)
	// oomState reads only the OOM kill counter and the memory limit.
	oomState() (Snapshot, error)
}

// Accounting reads the runner's own cgroup. It never writes to it. A nil
// *Accounting is valid and reads as an empty Snapshot.
type Accounting struct {
	r   reader
	log *slog.Logger
}

// Open finds the runner's cgroup (v1 or v2, detected from the
// /sys/fs/cgroup mount) and checks that it can be read. When none can, it
// returns a nil *Accounting and an error wrapping ErrUnavailable; callers
// carry on without accounting because the limits are enforced by the
// kernel regardless.
func Open() (*Accounting, error) {
	v := 0
	switch cgroups.Mode() {
	case cgroups.Unified:
		v = 2
	case cgroups.Legacy, cgroups.Hybrid:
		// On a hybrid host the controllers that matter (memory, pids,
		// cpuacct) are on the v1 hierarchies; the v2 mount holds none.
		v = 1
	}
	return open(defaultPaths(), v)
}

func open(p paths, version int) (*Accounting, error) {
	var (
		r   reader
		err error
	)
	switch version {
	case 1:
		r, err = openV1(p)
	case 2:
		r, err = openV2(p)
	default:
		return nil, fmt.Errorf("open cgroup: %w: %s is not a cgroup mount", ErrUnavailable, p.root)
	}
	if err != nil {
		return nil, fmt.Errorf("open cgroup v%d: %w: %w", version, ErrUnavailable, err)
	}
	if _, err := r.snapshot(); err != nil {
		return nil, fmt.Errorf("read cgroup v%d: %w: %w", version, ErrUnavailable, err)
	}
	return &Accounting{r: r, log: slog.Default()}, nil
}

// Snapshot reads the cgroup now. Values that cannot be read are left zero;
// a read error is logged, not returned, because accounting is a report and
// must never fail a call.
func (a *Accounting) Snapshot() Snapshot { return a.read(reader.snapshot) }

// OOMState reads only what deciding and reporting an OOM kill needs:
// OOMKills, HasOOMKills and MemoryLimit (and Version). A call reads it
// after its process died the way an OOM kill ends one, so it reads two
// small files rather than every statistic of every controller, which
// took about a millisecond of each short call.
func (a *Accounting) OOMState() Snapshot { return a.read(reader.oomState) }

// OOMKills reads only OOMKills and HasOOMKills (and Version): what a call
// reads before its process starts, to compare with OOMState after. The
// limit is needed only to report a kill, so this reads one file.
func (a *Accounting) OOMKills() Snapshot { return a.read(reader.oomKills) }

// read reads with f, as Snapshot says.
func (a *Accounting) read(f func(reader) (Snapshot, error)) Snapshot {
	if a == nil {
		return Snapshot{}
	}
	s, err := f(a.r)
	if err != nil {
		a.log.Warn("read cgroup", "error", err)
	}
	return s
}

// readCounter returns the value of the line "key N" in a flat-keyed
// cgroup file (v1 memory.oom_control, v2 memory.events).
func readCounter(path, key string) (int64, bool, error) {
	b, err := sysfile.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil, err
		}
	}
	return 0, false, nil
}

// readLimit reads a memory limit file: a number of bytes, or "max" (v2)
// or a value at or above unlimited (v1) for none.
func readLimit(path string) (int64, error) {
	b, err := sysfile.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return limit(n), nil
}

// limit turns a limit file's value into bytes, 0 meaning none.
func limit(v uint64) int64 {
	if v >= unlimited {
		return 0
	}
	return int64(v)
}
