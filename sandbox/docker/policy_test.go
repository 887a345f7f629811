package docker_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// policyLimits differ from the defaults so the checks see them applied.
var policyLimits = sandbox.Limits{CPUs: 0.5, MemoryBytes: 384 << 20, Pids: 100,
	WorkspaceBytes: 64 << 20, TmpBytes: 32 << 20, NoFile: 512, FileSizeBytes: 16 << 20}

// TestInspectPolicy checks the engine's view of a live sandbox against the
// policy: what Docker recorded, not only what we asked for.
func TestInspectPolicy(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	sb, err := env.p.Create(t.Context(), sandbox.Spec{Limits: policyLimits})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	c, err := env.cli.ContainerInspect(t.Context(), sb.Info().ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	hc, r := c.HostConfig, c.HostConfig.Resources
	checks := []struct {
		name string
		ok   bool
		got  any
	}{
		{"running", c.State.Running, c.State.Status},
		{"user 1000:1000", c.Config.User == "1000:1000", c.Config.User},
		{"cap drop ALL", slices.Equal(hc.CapDrop, []string{"ALL"}) && len(hc.CapAdd) == 0, [2]any{hc.CapDrop, hc.CapAdd}},
		{"no-new-privileges only", slices.Equal(hc.SecurityOpt, []string{"no-new-privileges:true"}), hc.SecurityOpt},
		{"not privileged", !hc.Privileged, hc.Privileged},
		{"read-only root", hc.ReadonlyRootfs, hc.ReadonlyRootfs},
		{"no tmpfs /workspace (it is on disk)", hc.Tmpfs["/workspace"] == "", hc.Tmpfs},
		{"tmpfs /tmp size", strings.Contains(hc.Tmpfs["/tmp"], "size="+strconv.FormatInt(policyLimits.TmpBytes, 10)), hc.Tmpfs},
		{"pids", r.PidsLimit != nil && *r.PidsLimit == policyLimits.Pids, r.PidsLimit},
		{"memory == swap", r.Memory == policyLimits.MemoryBytes && r.MemorySwap == r.Memory, [2]int64{r.Memory, r.MemorySwap}},
		{"nanocpus", r.NanoCPUs == 500_000_000, r.NanoCPUs},
		{"network none", hc.NetworkMode == "none" && onlyNone(c.NetworkSettings.Networks), [2]any{hc.NetworkMode, c.NetworkSettings.Networks}},
		{"init", hc.Init != nil && *hc.Init, hc.Init},
		{"log driver none", hc.LogConfig.Type == "none", hc.LogConfig},
		{"no restart", hc.RestartPolicy.IsNone() && !hc.AutoRemove, hc.RestartPolicy},
		{"private namespaces", !hc.PidMode.IsHost() && !hc.IpcMode.IsHost() && !hc.UTSMode.IsHost() &&
			!hc.UsernsMode.IsHost() && !hc.CgroupnsMode.IsHost(), [5]any{hc.PidMode, hc.IpcMode, hc.UTSMode, hc.UsernsMode, hc.CgroupnsMode}},
		{"no devices", len(hc.Devices) == 0, hc.Devices},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: got %v", ch.name, ch.got)
		}
	}

	sockDir := env.cfg.SocketDir + "/" + sb.ID()
	wsDir := filepath.Join(filepath.Dir(env.cfg.SocketDir), "workspaces", sb.ID(), "mnt")
	if len(c.Mounts) != 3 {
		t.Fatalf("mounts = %+v, want only the runner, the socket dir and the workspace", c.Mounts)
	}
	for _, m := range c.Mounts {
		switch {
		case m.Destination == docker.RunnerPath && m.Source == env.cfg.RunnerPath && !m.RW:
		case m.Destination == "/run/sandgate" && m.Source == sockDir && m.RW:
		case m.Destination == "/workspace" && m.Source == wsDir && m.RW:
		default:
			t.Errorf("unexpected mount %+v", m)
		}
	}
}

// onlyNone reports whether the container is attached to no network but
// "none". With NetworkDisabled the engine attaches none at all.
func onlyNone[V any](nets map[string]V) bool {
	for name := range nets {
		if name != "none" {
			return false
		}
	}
	return true
}

// TestPolicyInForce checks from inside a live sandbox that the policy
// holds for its processes. docker exec is fine here; it is never used on
// the gateway's path.
func TestPolicyInForce(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	sb, err := env.p.Create(t.Context(), sandbox.Spec{Limits: policyLimits})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id := sb.Info().ContainerID
	tests := []struct{ script, want string }{
		{"id -u; id -g", "1000\n1000"},
		{"grep -E '^(CapEff|CapBnd|CapPrm)' /proc/self/status | awk '{print $2}' | sort -u", "0000000000000000"},
		{"grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | awk '{print $2}'", "1\n2"},
		{"touch /x 2>/dev/null && echo writable || echo read-only", "read-only"},
		{"touch /workspace/x /tmp/x && echo ok", "ok"},
		// ext4 keeps part of the image for its journal and metadata (13%
		// of a 64 MiB image, 2% of the 4 GiB default).
		{"s=$(df -B1 --output=size /workspace | tail -1); [ $s -le " + strconv.FormatInt(policyLimits.WorkspaceBytes, 10) + " ] && [ $s -ge " + strconv.FormatInt(policyLimits.WorkspaceBytes*3/4, 10) + " ] && echo in-quota", "in-quota"},
		{"stat -f -c %T /workspace; stat -c %u:%g /workspace", "ext2/ext3\n1000:1000"},
		{"df -B1 --output=size /tmp | tail -1 | tr -d ' '", strconv.FormatInt(policyLimits.TmpBytes, 10)},
		{"ulimit -n; ulimit -c", "512\n0"},
		{"ls /sys/class/net", "lo"},
		{"hostname", "sandbox"},
		{"tr '\\0' ' ' </proc/1/cmdline", "/sbin/docker-init -- " + docker.RunnerPath + " --socket /run/sandgate/runner.sock --workspace /workspace"},
		// The socket dir is sealed once the runner listens (socketdir.go).
		{"ls -A /run/sandgate 2>&1 >/dev/null | grep -c 'Permission denied'", "1"},
		{"tr '\\0' '\\n' </proc/1/environ | cut -d= -f1 | sort | tr '\\n' ' '", "GOMAXPROCS HOME HOSTNAME LANG PATH TMPDIR"},
		// The runner's Go runtime is sized to the half-core quota.
		{"tr '\\0' '\\n' </proc/1/environ | grep ^GOMAXPROCS=", "GOMAXPROCS=1"},
		{"cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max", "100"},
	}
	for _, tt := range tests {
		if got := execIn(t, env.cli, id, tt.script); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.script, got, tt.want)
		}
	}
}

// TestSocketSymlinkBreakout: were the socket dir the sandbox's, it could
// swap its runner socket for a symlink to another sandbox's socket or to
// the engine's (the link resolves on the host, where the gateway dials).
// The dir is sealed, so the swap itself is refused; and dialSocket would
// not follow such a link anyway (dial_test.go).
func TestSocketSymlinkBreakout(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	a, err := env.p.Create(t.Context(), sandbox.Spec{})
	if err != nil {
		t.Fatalf("Create a: %v", err)
	}
	b, err := env.p.Create(t.Context(), sandbox.Spec{})
	if err != nil {
		t.Fatalf("Create b: %v", err)
	}
	for _, target := range []string{"../" + b.ID() + "/runner.sock", env.cfg.SocketDir + "/" + b.ID() + "/runner.sock", "/var/run/docker.sock"} {
		out := execIn(t, env.cli, a.Info().ContainerID,
			"rm -f /run/sandgate/runner.sock && ln -s "+target+" /run/sandgate/runner.sock && echo planted")
		if strings.Contains(out, "planted") {
			t.Errorf("sandbox a replaced its runner socket with a symlink to %s", target)
		}
	}
	for _, sb := range []sandbox.Sandbox{a, b} {
		if conn, err := sb.Dial(t.Context()); err != nil {
			t.Errorf("Dial of sandbox %s: %v", sb.ID(), err)
		} else {
			conn.Close()
		}
	}
}

// TestWritablePlaces: a sandbox can write only to its size-enforced
// workspace and to tmpfs charged to its memory limit, never to a host
// directory. Before the socket dir was sealed, /run/sandgate was the host's
// var/sockets/<id>, writable and unbounded: `dd of=/run/sandgate/fill`
// filled the disk the audit log is on. Checked after a Recreate too, whose
// new runner needs the dir opened again.
func TestWritablePlaces(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	sb, err := env.p.Create(t.Context(), sandbox.Spec{})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	want := "/dev/mqueue mqueue\n/dev/shm tmpfs\n/tmp tmpfs\n/workspace ext4"
	check := func(when string, sb sandbox.Sandbox) {
		t.Helper()
		if got := execIn(t, env.cli, sb.Info().ContainerID, sandboxtest.WritablePlaces); got != want {
			t.Errorf("%s: writable mount points (as the sandbox user):\n%s\nwant only\n%s", when, got, want)
		}
		out := execIn(t, env.cli, sb.Info().ContainerID, "dd if=/dev/zero of=/run/sandgate/fill bs=64k count=16 2>&1; echo rc=$?")
		if !strings.Contains(out, "Permission denied") || strings.HasSuffix(out, "rc=0") {
			t.Errorf("%s: dd into /run/sandgate: %s; want Permission denied", when, out)
		}
		if ents, err := os.ReadDir(filepath.Join(env.cfg.SocketDir, sb.ID())); err != nil || len(ents) != 1 || ents[0].Name() != docker.SocketName {
			t.Errorf("%s: host socket dir holds %v (%v), want only %s", when, ents, err, docker.SocketName)
		}
	}
	check("after Create", sb)
	again, err := env.p.Recreate(t.Context(), sandbox.Spec{ID: sb.ID(), Owner: sb.Info().Owner})
	if err != nil {
		t.Fatalf("Recreate: %v", err)
	}
	check("after Recreate", again)
	if conn, err := again.Dial(t.Context()); err != nil {
		t.Errorf("Dial after Recreate: %v", err)
	} else {
		conn.Close()
	}
}

// execIn runs script with sh in container id as its default user and
// returns its trimmed stdout and stderr.
func execIn(t *testing.T, cli *client.Client, id, script string) string {
	t.Helper()
	ctx := t.Context()
	ex, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd: []string{"sh", "-c", script}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	att, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("attach %q: %v", script, err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		t.Fatalf("read %q: %v", script, err)
	}
	return strings.TrimSpace(out.String())
}
