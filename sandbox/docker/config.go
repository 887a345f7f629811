package docker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/sandgate/sandgate/sandbox"
)

// Fixed parts of every sandbox container.
const (
	// stopTimeoutSeconds bounds a graceful stop; Remove kills outright, so
	// this only matters to an operator's docker stop.
	stopTimeoutSeconds = 2
	// oomScoreAdj makes sandbox processes the host kernel's first victims
	// if the host itself runs out of memory, before the gateway or dockerd.
	oomScoreAdj = 500
)

// env is the whole environment the runner starts with. Nothing comes from
// the host: no token, key or host path may enter a sandbox. Docker merges
// the image's ENV under it, which is the image's business.
var env = []string{
	"HOME=" + WorkspaceDir,
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"LANG=C.UTF-8",
	"TMPDIR=/tmp",
}

// HostPaths are the host directories mounted into one sandbox.
type HostPaths struct {
	// SocketDir is the sandbox's own socket directory.
	SocketDir string
	// Workspace is the mounted workspace file system to bind at
	// /workspace; empty means a tmpfs /workspace (the fallback when the
	// host cannot loop-mount).
	Workspace string
}

// ContainerConfig returns the container and host configuration of the
// sandbox spec.ID, whose host directories are host. Every
// security-relevant field is set on purpose, including those whose zero
// value is already safe, so the policy reads in one place. Zero limits in
// spec and zero fields in cfg get their defaults: a zero never means
// unlimited or root, and an invalid User becomes DefaultUser. It reads the
// clock for the created-at label and is otherwise pure.
func ContainerConfig(spec sandbox.Spec, cfg Config, host HostPaths) (*container.Config, *container.HostConfig) {
	cfg = cfg.withDefaults()
	lim := spec.Limits.WithDefaults()
	image := spec.Image
	if image == "" {
		image = cfg.Image
	}
	if _, _, err := parseUser(cfg.User); err != nil {
		// New refuses such a Config; a direct caller gets the default
		// rather than a root or name-resolved user.
		cfg.User = DefaultUser
	}
	uid, gid, _ := strings.Cut(cfg.User, ":")
	now := time.Now()
	// Every sandbox gets an expiry a restarted gateway can enforce.
	if spec.ExpiresAt.IsZero() {
		spec.ExpiresAt = now.Add(lim.MaxLifetime)
	}

	cc := &container.Config{
		Image:    image,
		Hostname: "sandbox", // never the host's name or the container id
		// Numeric and non-root (Config.Validate); without it the image's
		// USER would apply, which may be root.
		User:       cfg.User,
		Env:        append(slices.Clone(env), "GOMAXPROCS="+lim.RunnerGOMAXPROCS()),
		WorkingDir: WorkspaceDir,
		// The runner is the entrypoint whatever the image says. An explicit
		// Entrypoint also stops Docker from appending the image's CMD.
		Entrypoint: entrypoint(cfg),
		Cmd:        nil,
		// Nothing attaches: the gateway talks to the runner over its socket.
		AttachStdin: false, AttachStdout: false, AttachStderr: false,
		OpenStdin: false, Tty: false,
		// No network stack at all under runc. gVisor's runsc cannot start
		// a container without one (the runner exits at once, unseen);
		// NetworkMode "none" below leaves it loopback only either way.
		NetworkDisabled: cfg.Runtime != "runsc",
		Labels:          labels(spec, cfg.Instance, now),
		StopTimeout:     ptr(stopTimeoutSeconds),
	}

	hc := &container.HostConfig{
		// Kernel privileges: none. The runner needs no capability to spawn
		// processes as its own user. no-new-privileges stops setuid
		// binaries in the image from regaining any. Docker's default
		// seccomp and AppArmor profiles stay on: neither is ever set to
		// unconfined.
		Privileged:  false,
		CapAdd:      nil,
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true"},

		// Namespaces: all private. Empty PID/UTS/user modes mean private
		// (or the daemon's userns remap); IPC and cgroup are named
		// explicitly because their defaults depend on daemon settings. A
		// private cgroup namespace also shows the runner its own cgroup as
		// "/", which is what its accounting reads.
		PidMode:      "",
		UTSMode:      "",
		UsernsMode:   "",
		IpcMode:      container.IPCModePrivate,
		CgroupnsMode: container.CgroupnsModePrivate,
		NetworkMode:  "none", // loopback only; egress goes through the runner's proxy to the gateway

		// File system: the image is read-only; the writable places are
		// /workspace, size-capped tmpfs and the sandbox's socket dir.
		// /workspace is the sandbox's own ext4 image on disk (see
		// sandbox/workspace): its size is enforced by the file system, so
		// a full workspace is ENOSPC, never memory. /tmp and /dev/shm are
		// tmpfs, charged to the memory cgroup; the gateway checks that
		// they fit in MemoryBytes with headroom (Limits.CheckMemory), so
		// files can never OOM-kill the runner. exec is allowed because
		// users run scripts and build tools from them; nosuid and nodev
		// are not negotiable.
		ReadonlyRootfs: true,
		Tmpfs:          tmpfs(lim, host, uid, gid),
		ShmSize:        sandbox.ShmBytes, // also tmpfs, also charged to memory
		Binds:          nil,              // host paths enter only through Mounts below
		Mounts:         mounts(cfg, host),
		// nil keeps Docker's default masked (/proc/kcore, ...) and
		// read-only (/proc/sys, ...) paths; an empty slice would clear them.
		MaskedPaths:   nil,
		ReadonlyPaths: nil,

		// Docker's init (tini) is pid 1: it reaps the orphans of killed
		// process trees and forwards signals to the runner.
		Init:    ptr(true),
		Runtime: cfg.Runtime, // e.g. runsc; empty is the engine default

		// The provider owns the lifecycle: nothing restarts or removes a
		// sandbox behind its back, so a crashed runner stays visible to
		// Create's error path and to reconciliation.
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		AutoRemove:    false,
		// No log driver: sandbox processes can reach the runner's stderr,
		// and json-file would let them make dockerd spend CPU and disk on
		// it. The cost: a runner that dies at start leaves only its exit
		// code and state (see waitReady), not its output.
		LogConfig: container.LogConfig{Type: "none"},

		OomScoreAdj: oomScoreAdj,
		Resources:   resources(lim),
	}
	return cc, hc
}

// tmpfs returns the sandbox's tmpfs mounts: /tmp always, and /workspace
// when no disk workspace is mounted, cut to what fits in memory.
func tmpfs(lim sandbox.Limits, host HostPaths, uid, gid string) map[string]string {
	t := map[string]string{
		"/tmp": fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", lim.TmpBytes),
	}
	if host.Workspace == "" {
		t[WorkspaceDir] = fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=0755,uid=%s,gid=%s",
			lim.TmpfsWorkspaceBytes(), uid, gid)
	}
	return t
}

// entrypoint starts the runner, with the extra CAs when there are some.
func entrypoint(cfg Config) []string {
	args := []string{RunnerPath, "--socket", ContainerSocketPath, "--workspace", WorkspaceDir}
	if cfg.CAFile != "" {
		args = append(args, "--extra-ca", CAPath)
	}
	return args
}

// mounts are the only host paths a sandbox sees: the runner binary and
// the operator's extra CAs, read-only, its own socket directory and its
// own workspace file system. Propagation is rprivate so nothing mounted
// on the host later appears inside.
func mounts(cfg Config, host HostPaths) []mount.Mount {
	ms := []mount.Mount{
		{
			Type:        mount.TypeBind,
			Source:      cfg.RunnerPath,
			Target:      RunnerPath,
			ReadOnly:    true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		},
		{
			Type:        mount.TypeBind,
			Source:      host.SocketDir,
			Target:      SocketDirPath,
			ReadOnly:    false, // the runner creates its socket here
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		},
	}
	if cfg.CAFile != "" {
		ms = append(ms, mount.Mount{
			Type:        mount.TypeBind,
			Source:      cfg.CAFile,
			Target:      CAPath,
			ReadOnly:    true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	if host.Workspace != "" {
		ms = append(ms, mount.Mount{
			Type:        mount.TypeBind,
			Source:      host.Workspace,
			Target:      WorkspaceDir,
			ReadOnly:    false,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	return ms
}

// resources are the cgroup limits and rlimits of one sandbox.
func resources(lim sandbox.Limits) container.Resources {
	return container.Resources{
		// Memory equals memory+swap: a sandbox never swaps, so its limit is
		// real RAM (tmpfs included) and an overrun is an OOM kill the
		// runner can report, not a slow host.
		Memory:           lim.MemoryBytes,
		MemorySwap:       lim.MemoryBytes,
		MemorySwappiness: ptr[int64](0), // cgroup v1; v2 engines ignore it
		OomKillDisable:   nil,           // the OOM killer must stay on
		NanoCPUs:         int64(lim.CPUs * 1e9),
		// The pids cgroup bounds processes and threads together (fork
		// bombs), so no nproc rlimit is needed; nproc would also count
		// processes of the same uid in other sandboxes.
		PidsLimit: ptr(lim.Pids),
		Ulimits: []*container.Ulimit{
			{Name: "nofile", Soft: lim.NoFile, Hard: lim.NoFile},
			{Name: "fsize", Soft: lim.FileSizeBytes, Hard: lim.FileSizeBytes},
			{Name: "core", Soft: 0, Hard: 0}, // no core dumps of sandbox memory
		},
		Devices:           nil, // no host devices
		DeviceCgroupRules: nil,
		DeviceRequests:    nil, // no GPUs
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
