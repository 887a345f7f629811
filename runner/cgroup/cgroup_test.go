package cgroup_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/runner/cgroup"
)

// TestOpenHost reads the cgroup of the test process itself. Every Linux
// host with cgroups mounted, and every container, has one.
func TestOpenHost(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		t.Skip("no /sys/fs/cgroup")
	}
	a, err := cgroup.Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s := a.Snapshot()
	if s.Version != 1 && s.Version != 2 {
		t.Errorf("Version = %d, want 1 or 2", s.Version)
	}
	if s.MemoryUsage <= 0 {
		t.Errorf("MemoryUsage = %d, want > 0", s.MemoryUsage)
	}
	if s.MemoryMaxUsage != 0 && s.MemoryMaxUsage < s.MemoryUsage/2 {
		t.Errorf("MemoryMaxUsage = %d, far below usage %d", s.MemoryMaxUsage, s.MemoryUsage)
	}
	if s.CPUUsageNs < 0 || s.OOMKills < 0 || s.PidsCurrent < 0 || s.MemoryLimit < 0 {
		t.Errorf("negative value in %+v", s)
	}
	t.Logf("snapshot: %+v", s)
	checkOOMState(t, a, s)
}

func TestNilAccounting(t *testing.T) {
	var a *cgroup.Accounting
	if s := a.Snapshot(); s != (cgroup.Snapshot{}) {
		t.Errorf("nil Snapshot = %+v, want zero", s)
	}
	if s := a.OOMState(); s != (cgroup.Snapshot{}) {
		t.Errorf("nil OOMState = %+v, want zero", s)
	}
	if s := a.OOMKills(); s != (cgroup.Snapshot{}) {
		t.Errorf("nil OOMKills = %+v, want zero", s)
	}
}

// writeTree creates files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const v1Mountinfo = `30 25 0:27 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
31 25 0:28 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct
32 25 0:29 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids
`

func v1Files(group string) map[string]string {
	return map[string]string{
		"memory" + group + "/memory.stat":               "cache 4096\nrss 4096\ntotal_cache 8192\n",
		"memory" + group + "/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
		"memory" + group + "/memory.usage_in_bytes":     "1048576\n",
		"memory" + group + "/memory.max_usage_in_bytes": "2097152\n",
		"memory" + group + "/memory.limit_in_bytes":     "536870912\n",
		"memory" + group + "/memory.failcnt":            "0\n",
		"cpuacct" + group + "/cpuacct.usage":            "5000000\n",
		"cpuacct" + group + "/cpuacct.stat":             "user 1\nsystem 1\n",
		"cpuacct" + group + "/cpuacct.usage_percpu":     "2500000 2500000\n",
		"pids" + group + "/pids.current":                "7\n",
		"pids" + group + "/pids.max":                    "256\n",
	}
}

// TestOpenV1 covers the group layouts a v1 runner meets: a container whose
// mounts show only its own group (the group named in /proc/self/cgroup is
// then "/" of the mount), a private cgroup namespace, and a host.
func TestOpenV1(t *testing.T) {
	tests := []struct {
		name, selfCgroup, mountinfo, group string
	}{
		{"container host cgroupns", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n2:pids:/docker/abc\n", v1Mountinfo, ""},
		{"container private cgroupns", "4:memory:/\n3:cpu,cpuacct:/\n2:pids:/\n", "", ""},
		{"host", "4:memory:/user.slice\n3:cpu,cpuacct:/user.slice\n2:pids:/user.slice\n", "", "/user.slice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, v1Files(tt.group))
			writeTree(t, dir, map[string]string{"proc/cgroup": tt.selfCgroup, "proc/mountinfo": tt.mountinfo})
			a, err := cgroup.OpenAt(dir, filepath.Join(dir, "proc/cgroup"), filepath.Join(dir, "proc/mountinfo"), 1)
			if err != nil {
				t.Fatalf("OpenAt: %v", err)
			}
			want := cgroup.Snapshot{
				Version: 1, CPUUsageNs: 5000000, MemoryUsage: 1 << 20, MemoryCache: 8192, MemoryMaxUsage: 2 << 20,
				MemoryLimit: 512 << 20, OOMKills: 3, HasOOMKills: true, PidsCurrent: 7, PidsLimit: 256,
			}
			if got := a.Snapshot(); got != want {
				t.Errorf("Snapshot = %+v\nwant       %+v", got, want)
			}
			checkOOMState(t, a, want)
		})
	}
}

// checkOOMState checks that OOMState reads the same OOM counter and limit
// as the full snapshot full, and nothing else, and OOMKills only the
// counter.
func checkOOMState(t *testing.T, a *cgroup.Accounting, full cgroup.Snapshot) {
	t.Helper()
	want := cgroup.Snapshot{Version: full.Version, MemoryLimit: full.MemoryLimit, OOMKills: full.OOMKills, HasOOMKills: full.HasOOMKills}
	if got := a.OOMState(); got != want {
		t.Errorf("OOMState = %+v\nwant       %+v", got, want)
	}
	want.MemoryLimit = 0
	if got := a.OOMKills(); got != want {
		t.Errorf("OOMKills = %+v\nwant       %+v", got, want)
	}
}

// TestOpenV1Old covers a kernel before 4.13 (no oom_kill counter), no
// swap accounting and no pids controller, and an unlimited memory limit.
func TestOpenV1Old(t *testing.T) {
	dir := t.TempDir()
	files := v1Files("")
	files["memory/memory.oom_control"] = "oom_kill_disable 0\nunder_oom 0\n"
	files["memory/memory.limit_in_bytes"] = "9223372036854771712\n"
	delete(files, "pids/pids.current")
	delete(files, "pids/pids.max")
	files["proc/cgroup"] = "4:memory:/\n3:cpu,cpuacct:/\n"
	writeTree(t, dir, files)
	a, err := cgroup.OpenAt(dir, filepath.Join(dir, "proc/cgroup"), filepath.Join(dir, "proc/none"), 1)
	if err != nil {
		t.Fatalf("OpenAt: %v", err)
	}
	s := a.Snapshot()
	if s.HasOOMKills || s.MemoryLimit != 0 || s.PidsCurrent != 0 || s.MemoryUsage != 1<<20 {
		t.Errorf("Snapshot = %+v, want no OOM counter, no limit, no pids, usage 1 MiB", s)
	}
	checkOOMState(t, a, s)
}

func TestOpenV2(t *testing.T) {
	files := map[string]string{
		"cpu.stat":       "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
		"memory.stat":    "anon 4096\nfile 12288\n",
		"memory.current": "1048576\n",
		"memory.peak":    "3145728\n",
		"memory.max":     "1073741824\n",
		"memory.events":  "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n",
		"pids.current":   "3\n",
		"pids.max":       "max\n",
	}
	tests := []struct {
		name, selfCgroup, mountinfo, group string
	}{
		{"private cgroupns", "0::/\n", "", ""},
		{"host cgroupns", "0::/system.slice/docker-abc.scope\n",
			"30 25 0:27 /system.slice/docker-abc.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", ""},
		{"host", "0::/user.slice/u.scope\n", "", "/user.slice/u.scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range files {
				writeTree(t, dir, map[string]string{filepath.Join(tt.group, name): content})
			}
			writeTree(t, dir, map[string]string{"proc/cgroup": tt.selfCgroup, "proc/mountinfo": tt.mountinfo})
			a, err := cgroup.OpenAt(dir, filepath.Join(dir, "proc/cgroup"), filepath.Join(dir, "proc/mountinfo"), 2)
			if err != nil {
				t.Fatalf("OpenAt: %v", err)
			}
			want := cgroup.Snapshot{
				Version: 2, CPUUsageNs: 1500000, MemoryUsage: 1 << 20, MemoryCache: 12288, MemoryMaxUsage: 3 << 20,
				MemoryLimit: 1 << 30, OOMKills: 2, HasOOMKills: true, PidsCurrent: 3,
			}
			if got := a.Snapshot(); got != want {
				t.Errorf("Snapshot = %+v\nwant       %+v", got, want)
			}
			checkOOMState(t, a, want)
		})
	}
}

func TestOpenUnavailable(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"proc/cgroup": "4:memory:/\n"})
	for _, v := range []int{0, 1} {
		a, err := cgroup.OpenAt(filepath.Join(dir, "missing"), filepath.Join(dir, "proc/cgroup"), "", v)
		if !errors.Is(err, cgroup.ErrUnavailable) || a != nil {
			t.Errorf("version %d: OpenAt = %v, %v; want nil, ErrUnavailable", v, a, err)
		}
	}
}
