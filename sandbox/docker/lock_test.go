package docker_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// openInstance opens a provider on instance with its own var dirs, as
// another gateway process would.
func openInstance(t *testing.T, instance string, wait time.Duration) (*docker.Provider, error) {
	t.Helper()
	sandboxtest.RequireDocker(t)
	dir := shortTempDir(t)
	cfg := docker.Config{RunnerPath: sandboxtest.RunnerBinary(t), SocketDir: filepath.Join(dir, "s"),
		Instance: instance, LockWait: wait, Holder: "second"}
	return docker.New(t.Context(), cfg, slog.New(slog.DiscardHandler))
}

// TestInstanceHeldByLiveGateway: while one gateway holds an instance, a
// second is refused with a message naming the holder and the flag, and the
// first one's sandbox is untouched.
func TestInstanceHeldByLiveGateway(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{Holder: "first, serving 127.0.0.1:1"})
	sb, err := env.p.Create(t.Context(), sandbox.Spec{Owner: "o"})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := openInstance(t, env.cfg.Instance, 300*time.Millisecond)
	if err == nil {
		p2.Close()
		t.Fatal("a second provider on a live instance was allowed")
	}
	msg := err.Error()
	for _, want := range []string{"held by another live gateway", fmt.Sprintf("pid %d", os.Getpid()), "first, serving 127.0.0.1:1", "--instance"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not mention %q", msg, want)
		}
	}
	if _, err := env.p.Get(t.Context(), sb.ID()); err != nil {
		t.Fatalf("the first gateway's sandbox after the refusal: %v", err)
	}
}

// TestInstanceHandedOver: a gateway started while the old one shuts down
// (a restart that overlaps) waits for the instance and gets it once the
// old one lets go.
func TestInstanceHandedOver(t *testing.T) {
	t.Parallel()
	instance := "test-" + randomHex(6)
	old, err := openInstance(t, instance, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		p   *docker.Provider
		err error
	}
	got := make(chan result, 1)
	go func() {
		p, err := openInstance(t, instance, time.Minute)
		got <- result{p, err}
	}()
	select {
	case r := <-got:
		if r.err == nil {
			r.p.Close()
		}
		t.Fatalf("the new provider did not wait for the old one: %v", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	old.Close() // the old process exits
	r := <-got
	if r.err != nil {
		t.Fatalf("the new provider after the old one let go: %v", r.err)
	}
	r.p.Close()
}

// TestTmpfsFallback: with the tmpfs backend (hosts that cannot
// loop-mount), /workspace is a tmpfs cut to fit the memory limit, the
// sandbox says its workspace is not durable, and a recreated sandbox
// starts with an empty workspace.
func TestTmpfsFallback(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{WorkspaceBackend: "tmpfs"})
	if env.p.WorkspaceDurable() {
		t.Fatal("the tmpfs backend reports durable workspaces")
	}
	spec := sandbox.Spec{Owner: "o"}
	sb, err := env.p.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Info().WorkspaceDurable {
		t.Error("Info().WorkspaceDurable on tmpfs")
	}
	want := sandbox.DefaultLimits.WithDefaults().TmpfsWorkspaceBytes()
	got := execIn(t, env.cli, sb.Info().ContainerID, "stat -f -c %T /workspace; df -B1 --output=size /workspace | tail -1 | tr -d ' '; touch /workspace/f && echo ok")
	if got != fmt.Sprintf("tmpfs\n%d\nok", want) {
		t.Fatalf("tmpfs /workspace: %q, want a tmpfs of %d bytes", got, want)
	}
	spec.ID = sb.ID()
	again, err := env.p.Recreate(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := execIn(t, env.cli, again.Info().ContainerID, "ls -A /workspace | wc -l"); got != "0" {
		t.Errorf("recreated tmpfs workspace holds %s entries, want 0", got)
	}
}
