package cgroup

import (
	"fmt"
	"path/filepath"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// v2 reads the unified hierarchy. Inside a container with a private cgroup
// namespace (Docker's default on v2) the runner's group is the mount's
// root and /proc/self/cgroup says "0::/".
type v2 struct {
	m   *cgroup2.Manager
	dir string // the group's directory
}

func openV2(p paths) (reader, error) {
	_, own, err := cgroups.ParseCgroupFileUnified(p.selfCgroup)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", p.selfCgroup, err)
	}
	g := resolveGroup(p.root, own, mountRoots(p.mountinfo)[""])
	if g == "" {
		return nil, fmt.Errorf("no cgroup directory for %q under %s", own, p.root)
	}
	m, err := cgroup2.Load(g, cgroup2.WithMountpoint(p.root))
	if err != nil {
		return nil, fmt.Errorf("load cgroup %s: %w", g, err)
	}
	return &v2{m: m, dir: filepath.Join(p.root, g)}, nil
}

func (r *v2) oomKills() (Snapshot, error) {
	s := Snapshot{Version: 2}
	kills, found, err := readCounter(filepath.Join(r.dir, "memory.events"), "oom_kill")
	s.OOMKills, s.HasOOMKills = kills, found
	return s, err
}

func (r *v2) oomState() (Snapshot, error) {
	s, err := r.oomKills()
	if err != nil {
		return s, err
	}
	s.MemoryLimit, err = readLimit(filepath.Join(r.dir, "memory.max"))
	return s, err
}

func (r *v2) snapshot() (Snapshot, error) {
	s := Snapshot{Version: 2}
	m, err := r.m.StatFiltered(cgroup2.StatCPU | cgroup2.StatMemory | cgroup2.StatMemoryEvents | cgroup2.StatPids)
	if err != nil {
		return s, fmt.Errorf("stat cgroup v2: %w", err)
	}
	if m.CPU != nil {
		s.CPUUsageNs = int64(m.CPU.UsageUsec) * 1000
	}
	if m.Memory != nil {
		s.MemoryUsage = int64(m.Memory.Usage)
		s.MemoryCache = int64(m.Memory.File)
		s.MemoryMaxUsage = int64(m.Memory.MaxUsage) // memory.peak: Linux 5.19 and later
		s.MemoryLimit = limit(m.Memory.UsageLimit)
	}
	if m.MemoryEvents != nil {
		s.OOMKills = int64(m.MemoryEvents.OomKill)
		s.HasOOMKills = true
	}
	if m.Pids != nil {
		s.PidsCurrent = int64(m.Pids.Current)
		s.PidsLimit = limit(m.Pids.Limit)
	}
	return s, nil
}
