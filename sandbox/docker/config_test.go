package docker_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
)

const (
	testRunner    = "/usr/local/lib/sandgate/runner"
	testSocketDir = "/run/sandgate-gw/abc123"
	testWorkspace = "/var/lib/sandgate/workspaces/abc123/mnt"
	testCAFile    = "/etc/sandgate/extra-ca.pem"
)

var (
	diskHost  = docker.HostPaths{SocketDir: testSocketDir, Workspace: testWorkspace}
	tmpfsHost = docker.HostPaths{SocketDir: testSocketDir}
)

// TestContainerConfigPolicy checks the hardening every sandbox container
// must have, for default and custom limits and configs.
func TestContainerConfigPolicy(t *testing.T) {
	t.Parallel()
	custom := sandbox.Limits{CPUs: 0.5, MemoryBytes: 1 << 30, Pids: 64, WorkspaceBytes: 100 << 20,
		TmpBytes: 10 << 20, NoFile: 256, FileSizeBytes: 50 << 20}
	tests := []struct {
		name string
		spec sandbox.Spec
		cfg  docker.Config
		host docker.HostPaths
		want sandbox.Limits
		user string
	}{
		{"defaults", sandbox.Spec{ID: "abc123"}, docker.Config{RunnerPath: testRunner, SocketDir: "/run/sandgate-gw"}, diskHost, sandbox.DefaultLimits.WithDefaults(), "1000:1000"},
		{"defaults on tmpfs", sandbox.Spec{ID: "abc123"}, docker.Config{RunnerPath: testRunner, SocketDir: "/run/sandgate-gw"}, tmpfsHost, sandbox.DefaultLimits.WithDefaults(), "1000:1000"},
		{"root user replaced", sandbox.Spec{ID: "abc123"}, docker.Config{RunnerPath: testRunner, User: "0:0"}, tmpfsHost, sandbox.DefaultLimits.WithDefaults(), "1000:1000"},
		{"custom", sandbox.Spec{ID: "abc123", Image: "img:1", Limits: custom, Owner: "o", Session: "s"},
			docker.Config{RunnerPath: testRunner, SocketDir: "/run/sandgate-gw", User: "2000:3000", Instance: "ci", Runtime: "runsc"},
			diskHost, custom.WithDefaults(), "2000:3000"},
		{"custom on tmpfs", sandbox.Spec{ID: "abc123", Image: "img:1", Limits: custom, Owner: "o", Session: "s"},
			docker.Config{RunnerPath: testRunner, SocketDir: "/run/sandgate-gw", User: "2000:3000", Instance: "ci", Runtime: "runsc"},
			tmpfsHost, custom.WithDefaults(), "2000:3000"},
		{"extra CAs", sandbox.Spec{ID: "abc123"}, docker.Config{RunnerPath: testRunner, SocketDir: "/run/sandgate-gw", CAFile: testCAFile},
			diskHost, sandbox.DefaultLimits.WithDefaults(), "1000:1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cc, hc := docker.ContainerConfig(tt.spec, tt.cfg, tt.host)
			checkPrivileges(t, hc)
			checkNamespaces(t, cc, hc)
			checkMounts(t, hc, tt.host, tt.cfg.CAFile)
			checkLimits(t, hc, tt.want, tt.host)
			checkProcess(t, cc, hc, tt.cfg, tt.user, tt.host)
			checkLabels(t, cc, tt.spec, tt.cfg)
		})
	}
}

func checkPrivileges(t *testing.T, hc *container.HostConfig) {
	t.Helper()
	if hc.Privileged {
		t.Error("Privileged is set")
	}
	if len(hc.CapAdd) != 0 {
		t.Errorf("CapAdd = %v, want none", hc.CapAdd)
	}
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) {
		t.Errorf("CapDrop = %v, want [ALL]", hc.CapDrop)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("SecurityOpt = %v, want no-new-privileges:true", hc.SecurityOpt)
	}
	for _, o := range hc.SecurityOpt {
		if strings.Contains(o, "unconfined") || strings.HasPrefix(o, "seccomp") || strings.HasPrefix(o, "apparmor") {
			t.Errorf("SecurityOpt %q weakens the default seccomp/AppArmor profile", o)
		}
	}
	if len(hc.Devices) != 0 || len(hc.DeviceCgroupRules) != 0 || len(hc.DeviceRequests) != 0 {
		t.Errorf("devices = %v %v %v, want none", hc.Devices, hc.DeviceCgroupRules, hc.DeviceRequests)
	}
	if hc.OomKillDisable != nil && *hc.OomKillDisable {
		t.Error("OomKillDisable is set")
	}
	if len(hc.Sysctls) != 0 || hc.MaskedPaths != nil || hc.ReadonlyPaths != nil {
		t.Errorf("sysctls %v, masked %v, read-only %v: want Docker's defaults", hc.Sysctls, hc.MaskedPaths, hc.ReadonlyPaths)
	}
}

func checkNamespaces(t *testing.T, cc *container.Config, hc *container.HostConfig) {
	t.Helper()
	if hc.PidMode.IsHost() || hc.IpcMode.IsHost() || hc.UTSMode.IsHost() || hc.UsernsMode.IsHost() ||
		hc.CgroupnsMode.IsHost() || hc.NetworkMode.IsHost() {
		t.Errorf("host namespace: pid %q ipc %q uts %q userns %q cgroupns %q net %q",
			hc.PidMode, hc.IpcMode, hc.UTSMode, hc.UsernsMode, hc.CgroupnsMode, hc.NetworkMode)
	}
	if hc.PidMode.IsContainer() || hc.IpcMode.IsContainer() || hc.NetworkMode.IsContainer() {
		t.Errorf("namespace shared with another container: pid %q ipc %q net %q", hc.PidMode, hc.IpcMode, hc.NetworkMode)
	}
	// runsc needs a network stack to start; mode none keeps it loopback.
	if want := hc.Runtime != "runsc"; hc.NetworkMode != "none" || cc.NetworkDisabled != want {
		t.Errorf("network: mode %q disabled %v (runtime %q), want none and %v", hc.NetworkMode, cc.NetworkDisabled, hc.Runtime, want)
	}
	if len(hc.PortBindings) != 0 || hc.PublishAllPorts || len(hc.ExtraHosts) != 0 || len(hc.Links) != 0 {
		t.Error("ports, links or extra hosts are set")
	}
	if len(hc.VolumesFrom) != 0 {
		t.Errorf("VolumesFrom = %v, want none", hc.VolumesFrom)
	}
}

func checkMounts(t *testing.T, hc *container.HostConfig, host docker.HostPaths, caFile string) {
	t.Helper()
	if len(hc.Binds) != 0 {
		t.Errorf("Binds = %v, want none", hc.Binds)
	}
	for _, m := range hc.Mounts {
		if strings.Contains(m.Source, "docker.sock") || strings.Contains(m.Target, "docker.sock") {
			t.Errorf("mount %+v exposes the Docker socket", m)
		}
	}
	want := []mount.Mount{
		{Type: mount.TypeBind, Source: testRunner, Target: docker.RunnerPath, ReadOnly: true},
		{Type: mount.TypeBind, Source: testSocketDir, Target: "/run/sandgate", ReadOnly: false},
	}
	wantTmpfs := 2 // /tmp and /workspace
	if caFile != "" {
		want = append(want, mount.Mount{Type: mount.TypeBind, Source: caFile, Target: docker.CAPath, ReadOnly: true})
	}
	if host.Workspace != "" {
		// The disk workspace is the sandbox's own file system, bound
		// read-write; /workspace is then not a tmpfs.
		want = append(want, mount.Mount{Type: mount.TypeBind, Source: testWorkspace, Target: "/workspace", ReadOnly: false})
		wantTmpfs = 1
	}
	if len(hc.Mounts) != len(want) {
		t.Fatalf("Mounts = %+v, want exactly the runner, the socket dir and a disk workspace", hc.Mounts)
	}
	for i, m := range hc.Mounts {
		w := want[i]
		if m.Type != w.Type || m.Source != w.Source || m.Target != w.Target || m.ReadOnly != w.ReadOnly {
			t.Errorf("Mounts[%d] = %+v, want %+v", i, m, w)
		}
		if m.BindOptions == nil || m.BindOptions.Propagation != mount.PropagationRPrivate {
			t.Errorf("Mounts[%d] propagation = %+v, want rprivate", i, m.BindOptions)
		}
	}
	if !hc.ReadonlyRootfs {
		t.Error("root file system is writable")
	}
	if len(hc.Tmpfs) != wantTmpfs {
		t.Errorf("Tmpfs = %v, want %d mounts (/tmp, and /workspace without a disk workspace)", hc.Tmpfs, wantTmpfs)
	}
	for dir, opts := range hc.Tmpfs {
		o := strings.Split(opts, ",")
		if !slices.Contains(o, "nosuid") || !slices.Contains(o, "nodev") || slices.Contains(o, "suid") || slices.Contains(o, "dev") {
			t.Errorf("tmpfs %s options %q: want nosuid,nodev", dir, opts)
		}
	}
}

func checkLimits(t *testing.T, hc *container.HostConfig, want sandbox.Limits, host docker.HostPaths) {
	t.Helper()
	r := hc.Resources
	if r.Memory != want.MemoryBytes || r.MemorySwap != r.Memory {
		t.Errorf("memory %d, memory+swap %d, want both %d", r.Memory, r.MemorySwap, want.MemoryBytes)
	}
	if r.MemorySwappiness == nil || *r.MemorySwappiness != 0 {
		t.Errorf("MemorySwappiness = %v, want 0", r.MemorySwappiness)
	}
	if r.NanoCPUs != int64(want.CPUs*1e9) || r.NanoCPUs <= 0 {
		t.Errorf("NanoCPUs = %d, want %d", r.NanoCPUs, int64(want.CPUs*1e9))
	}
	if r.PidsLimit == nil || *r.PidsLimit != want.Pids || *r.PidsLimit <= 0 {
		t.Errorf("PidsLimit = %v, want %d", r.PidsLimit, want.Pids)
	}
	ul := map[string][2]int64{}
	for _, u := range r.Ulimits {
		ul[u.Name] = [2]int64{u.Soft, u.Hard}
	}
	for name, v := range map[string]int64{"nofile": want.NoFile, "fsize": want.FileSizeBytes, "core": 0} {
		if got, ok := ul[name]; !ok || got != [2]int64{v, v} {
			t.Errorf("ulimit %s = %v (set %v), want soft=hard=%d", name, got, ok, v)
		}
	}
	wantTmpfs := map[string]string{"/tmp": "size=" + strconv.FormatInt(want.TmpBytes, 10)}
	if host.Workspace == "" {
		// The fallback workspace is cut to what fits beside /tmp, /dev/shm
		// and the runner's headroom: files must never OOM-kill the runner.
		ws := want.TmpfsWorkspaceBytes()
		if ws <= 0 || want.TmpBytes+ws+sandbox.ShmBytes+sandbox.RunnerHeadroomBytes > want.MemoryBytes {
			t.Errorf("tmpfs workspace of %d bytes does not leave the runner its headroom in %d bytes", ws, want.MemoryBytes)
		}
		wantTmpfs["/workspace"] = "size=" + strconv.FormatInt(ws, 10)
	}
	for dir, size := range wantTmpfs {
		if !slices.Contains(strings.Split(hc.Tmpfs[dir], ","), size) {
			t.Errorf("tmpfs %s = %q, want %s", dir, hc.Tmpfs[dir], size)
		}
	}
	if hc.ShmSize <= 0 || hc.ShmSize > want.MemoryBytes {
		t.Errorf("ShmSize = %d, want a positive size below the memory limit", hc.ShmSize)
	}
}

func checkProcess(t *testing.T, cc *container.Config, hc *container.HostConfig, cfg docker.Config, user string, host docker.HostPaths) {
	t.Helper()
	if cc.User != user || strings.HasPrefix(cc.User, "0") || cc.User == "" || cc.User == "root" {
		t.Errorf("User = %q, want %q", cc.User, user)
	}
	uid, gid, _ := strings.Cut(user, ":")
	// A disk workspace's root is owned by the sandbox user from mkfs
	// (sandbox/workspace tests it); a tmpfs one through its options.
	if ws := hc.Tmpfs["/workspace"]; host.Workspace == "" && (!strings.Contains(ws, "uid="+uid) || !strings.Contains(ws, "gid="+gid)) {
		t.Errorf("/workspace tmpfs %q is not owned by %s", ws, user)
	}
	wantEntry := []string{"/opt/sandgate/runner", "--socket", "/run/sandgate/runner.sock", "--workspace", "/workspace"}
	if cfg.CAFile != "" {
		wantEntry = append(wantEntry, "--extra-ca", "/opt/sandgate/ca.pem")
	}
	if !slices.Equal(cc.Entrypoint, wantEntry) || len(cc.Cmd) != 0 {
		t.Errorf("Entrypoint %v Cmd %v, want %v and no Cmd", cc.Entrypoint, cc.Cmd, wantEntry)
	}
	cores := (hc.NanoCPUs + 1e9 - 1) / 1e9 // the CPU quota rounded up
	wantEnv := []string{"HOME=/workspace", "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TMPDIR=/tmp", fmt.Sprintf("GOMAXPROCS=%d", cores)}
	if !slices.Equal(cc.Env, wantEnv) {
		t.Errorf("Env = %v, want exactly %v", cc.Env, wantEnv)
	}
	if hc.Init == nil || !*hc.Init {
		t.Error("Init is not set")
	}
	if hc.LogConfig.Type != "none" {
		t.Errorf("log driver %q, want none", hc.LogConfig.Type)
	}
	if hc.AutoRemove || !hc.RestartPolicy.IsNone() {
		t.Errorf("AutoRemove %v RestartPolicy %+v, want false and no", hc.AutoRemove, hc.RestartPolicy)
	}
	if cc.Hostname != "sandbox" || cc.WorkingDir != "/workspace" || cc.Tty || cc.OpenStdin {
		t.Errorf("hostname %q workdir %q tty %v stdin %v", cc.Hostname, cc.WorkingDir, cc.Tty, cc.OpenStdin)
	}
	if hc.Runtime != cfg.Runtime {
		t.Errorf("Runtime = %q, want %q", hc.Runtime, cfg.Runtime)
	}
	if cc.StopTimeout == nil || *cc.StopTimeout > 10 {
		t.Errorf("StopTimeout = %v, want a few seconds", cc.StopTimeout)
	}
}

func checkLabels(t *testing.T, cc *container.Config, spec sandbox.Spec, cfg docker.Config) {
	t.Helper()
	instance := cfg.Instance
	if instance == "" {
		instance = docker.DefaultInstance
	}
	want := map[string]string{
		docker.LabelManaged: "true", docker.LabelInstance: instance, docker.LabelSandbox: spec.ID,
		docker.LabelOwner: spec.Owner, docker.LabelSession: spec.Session,
	}
	for k, v := range want {
		if got, ok := cc.Labels[k]; !ok || got != v {
			t.Errorf("label %s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	created, err := time.Parse(time.RFC3339Nano, cc.Labels[docker.LabelCreatedAt])
	if err != nil || time.Since(created) > time.Minute {
		t.Errorf("label %s = %q: want about now (%v)", docker.LabelCreatedAt, cc.Labels[docker.LabelCreatedAt], err)
	}
	expires, err := time.Parse(time.RFC3339Nano, cc.Labels[docker.LabelExpiresAt])
	if err != nil || !expires.After(created) {
		t.Errorf("label %s = %q: want a time after creation (%v)", docker.LabelExpiresAt, cc.Labels[docker.LabelExpiresAt], err)
	}
}

// TestConfigValidate covers what New refuses before touching anything.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := docker.Config{RunnerPath: testRunner, SocketDir: "/run/sg"}
	tests := []struct {
		name    string
		mutate  func(*docker.Config)
		wantErr bool
	}{
		{"defaults", func(*docker.Config) {}, false},
		{"explicit user", func(c *docker.Config) { c.User = "1234:1234" }, false},
		{"no runner", func(c *docker.Config) { c.RunnerPath = "" }, true},
		{"relative socket dir", func(c *docker.Config) { c.SocketDir = "run/sg" }, true},
		{"empty socket dir", func(c *docker.Config) { c.SocketDir = "" }, true},
		{"root uid", func(c *docker.Config) { c.User = "0:1000" }, true},
		{"root gid", func(c *docker.Config) { c.User = "1000:0" }, true},
		{"user name", func(c *docker.Config) { c.User = "sandbox" }, true},
		{"uid only", func(c *docker.Config) { c.User = "1000" }, true},
		{"negative", func(c *docker.Config) { c.User = "-1:-1" }, true},
		{"signed", func(c *docker.Config) { c.User = "+1000:1000" }, true},
		{"instance with slash", func(c *docker.Config) { c.Instance = "a/b" }, true},
		{"instance dotdot", func(c *docker.Config) { c.Instance = ".." }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tt.mutate(&c)
			if err := c.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate(%+v) = %v, want error %v", c, err, tt.wantErr)
			}
		})
	}
}
