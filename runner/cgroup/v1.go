package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
)

// v1 reads the memory, cpuacct and pids hierarchies of a legacy or hybrid
// host. Each controller has its own mount and may place the runner at a
// different path, so the group is resolved per controller.
type v1 struct {
	cg     cgroup1.Cgroup
	memory string // the memory group's directory; "" without one
	hasOOM bool   // memory.oom_control has the oom_kill counter
}

func openV1(p paths) (reader, error) {
	own, _, err := cgroups.ParseCgroupFileUnified(p.selfCgroup)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", p.selfCgroup, err)
	}
	roots := mountRoots(p.mountinfo)
	groups := map[cgroup1.Name]string{}
	for _, name := range []cgroup1.Name{cgroup1.Memory, cgroup1.Cpuacct, cgroup1.Pids} {
		if g := resolveGroup(filepath.Join(p.root, string(name)), own[string(name)], roots[string(name)]); g != "" {
			groups[name] = g
		}
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no memory, cpuacct or pids hierarchy under %s", p.root)
	}
	hierarchy := func() ([]cgroup1.Subsystem, error) {
		// kmem accounting is deprecated and absent on recent kernels, and
		// memsw exists only with swap accounting on.
		return []cgroup1.Subsystem{
			cgroup1.NewMemory(p.root, cgroup1.IgnoreModules("kmem", "kmem.tcp"), cgroup1.OptionalSwap()),
			cgroup1.NewCpuacct(p.root),
			cgroup1.NewPids(p.root),
		}, nil
	}
	path := func(name cgroup1.Name) (string, error) {
		if g, ok := groups[name]; ok {
			return g, nil
		}
		return "", cgroup1.ErrControllerNotActive
	}
	cg, err := cgroup1.Load(path, cgroup1.WithHierarchy(hierarchy))
	if err != nil {
		return nil, fmt.Errorf("load cgroup: %w", err)
	}
	r := &v1{cg: cg}
	if g, ok := groups[cgroup1.Memory]; ok {
		r.memory = filepath.Join(p.root, string(cgroup1.Memory), g)
		r.hasOOM = hasOOMKillField(filepath.Join(r.memory, "memory.oom_control"))
	}
	return r, nil
}

func (r *v1) snapshot() (Snapshot, error) {
	s := Snapshot{Version: 1}
	m, err := r.cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return s, fmt.Errorf("stat cgroup v1: %w", err)
	}
	if m.CPU != nil && m.CPU.Usage != nil {
		s.CPUUsageNs = int64(m.CPU.Usage.Total)
	}
	if m.Memory != nil && m.Memory.Usage != nil {
		s.MemoryUsage = int64(m.Memory.Usage.Usage)
		s.MemoryCache = int64(max(m.Memory.TotalCache, m.Memory.Cache)) // total_ counts the group's children, as usage does
		s.MemoryMaxUsage = int64(m.Memory.Usage.Max)
		s.MemoryLimit = limit(m.Memory.Usage.Limit)
	}
	if m.MemoryOomControl != nil {
		s.OOMKills = int64(m.MemoryOomControl.OomKill)
		s.HasOOMKills = r.hasOOM
	}
	if m.Pids != nil {
		s.PidsCurrent = int64(m.Pids.Current)
		s.PidsLimit = int64(m.Pids.Limit) // "max" reads as 0
	}
	return s, nil
}

func (r *v1) oomKills() (Snapshot, error) {
	s := Snapshot{Version: 1}
	if r.memory == "" {
		return s, nil
	}
	kills, found, err := readCounter(filepath.Join(r.memory, "memory.oom_control"), "oom_kill")
	s.OOMKills, s.HasOOMKills = kills, found && r.hasOOM
	return s, err
}

func (r *v1) oomState() (Snapshot, error) {
	s, err := r.oomKills()
	if err != nil || r.memory == "" {
		return s, err
	}
	s.MemoryLimit, err = readLimit(filepath.Join(r.memory, "memory.limit_in_bytes"))
	return s, err
}

// hasOOMKillField reports whether the memory.oom_control file at path
// carries the oom_kill counter (Linux 4.13 and later); the parser reads a
// missing one as 0, which would hide every OOM kill.
func hasOOMKillField(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, _, _ := strings.Cut(line, " "); k == "oom_kill" {
			return true
		}
	}
	return false
}
