package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// testImage is the image integration tests run; images/build.sh makes it.
const testImage = docker.DefaultImage

// testEnv is a Provider with its own instance and socket dir.
type testEnv struct {
	p   *docker.Provider
	cfg docker.Config
	cli *client.Client
}

// newEnv returns a provider for cfg (RunnerPath defaults to the test
// runner) with a fresh Instance, so parallel tests and test runs never see
// each other's containers. t.Cleanup removes every container of that
// instance, whatever state the test left, and then the socket dir.
func newEnv(t testing.TB, cfg docker.Config) *testEnv {
	t.Helper()
	sandboxtest.RequireImage(t, testImage)
	if cfg.RunnerPath == "" {
		cfg.RunnerPath = sandboxtest.RunnerBinary(t)
	}
	if cfg.SocketDir == "" {
		cfg.SocketDir = filepath.Join(shortTempDir(t), "s")
	}
	cfg.Instance = "test-" + randomHex(6)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := docker.New(t.Context(), cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		removeInstance(t, cli, cfg.Instance)
		removeHostState(t, p)
		p.Close()
		cli.Close()
	})
	return &testEnv{p: p, cfg: cfg, cli: cli}
}

// removeInstance force-removes every container labelled with instance.
func removeInstance(t testing.TB, cli *client.Client, instance string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstance+"="+instance))})
	if err != nil {
		t.Errorf("cleanup: list containers of %s: %v", instance, err)
		return
	}
	for _, c := range cs {
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("cleanup: remove container %s: %v", c.ID, err)
		}
	}
}

// removeHostState removes what the instance's sandboxes keep on the host
// (workspace mounts, socket dirs) once their containers are gone, so the
// temp dirs can be deleted.
func removeHostState(t testing.TB, p *docker.Provider) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	infos, err := p.List(ctx, sandbox.Filter{})
	if err != nil {
		t.Errorf("cleanup: list sandboxes: %v", err)
		return
	}
	for _, info := range infos {
		if err := p.Remove(ctx, info.ID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("cleanup: remove sandbox %s: %v", info.ID, err)
		}
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	sandboxtest.Conformance(t, func(t *testing.T) sandbox.Provider {
		return newEnv(t, docker.Config{}).p
	}, testImage)
}

// TestStartFailed: a runner that exits at once gives ErrStartFailed with
// its exit code, and Create leaves neither container nor socket dir.
func TestStartFailed(t *testing.T) {
	t.Parallel()
	script := filepath.Join(shortTempDir(t), "runner")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, docker.Config{RunnerPath: script})
	_, err := env.p.Create(t.Context(), sandbox.Spec{Owner: "o"})
	if !errors.Is(err, sandbox.ErrStartFailed) || !strings.Contains(err.Error(), "exit code 3") {
		t.Fatalf("Create: err = %v, want ErrStartFailed with exit code 3", err)
	}
	env.assertEmpty(t)
}

// TestSocketPathTooLong: a socket dir too deep for a unix socket path is
// refused before anything is made.
func TestSocketPathTooLong(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(shortTempDir(t), strings.Repeat("d", 70))
	env := newEnv(t, docker.Config{SocketDir: dir})
	_, err := env.p.Create(t.Context(), sandbox.Spec{})
	if err == nil || !strings.Contains(err.Error(), "socket path") {
		t.Fatalf("Create: err = %v, want a socket path length error", err)
	}
	env.assertEmpty(t)
}

// TestImageVolumeRefused: an image declaring VOLUME would get host disk
// outside the size limits, so Create refuses it.
func TestImageVolumeRefused(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	ref := "sandgate/test-volume:" + randomHex(6)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.Close()
	rc, err := env.cli.ImageImport(t.Context(), image.ImportSource{Source: &buf, SourceName: "-"}, ref,
		image.ImportOptions{Changes: []string{"VOLUME /data"}})
	if err != nil {
		t.Fatalf("import test image: %v", err)
	}
	rc.Close()
	t.Cleanup(func() { env.cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true}) })

	_, err = env.p.Create(t.Context(), sandbox.Spec{Image: ref})
	if err == nil || !strings.Contains(err.Error(), "VOLUME") {
		t.Fatalf("Create: err = %v, want a VOLUME refusal", err)
	}
	env.assertEmpty(t)
}

// TestInvalidSpecID: an id that could escape SocketDir is refused.
func TestInvalidSpecID(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	for _, id := range []string{"..", "../escape", "a/b", ".x"} {
		if _, err := env.p.Create(t.Context(), sandbox.Spec{ID: id}); err == nil {
			t.Errorf("Create with id %q succeeded", id)
		}
		if err := env.p.Remove(t.Context(), id); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Remove(%q) = %v, want ErrNotFound", id, err)
		}
	}
	env.assertEmpty(t)
}

// assertEmpty fails t if the instance has containers or socket dirs.
func (e *testEnv) assertEmpty(t *testing.T) {
	t.Helper()
	if infos, err := e.p.List(t.Context(), sandbox.Filter{}); err != nil || len(infos) != 0 {
		t.Errorf("List = %v, %v; want nothing left behind", infos, err)
	}
	if ents, err := os.ReadDir(e.cfg.SocketDir); err != nil || len(ents) != 0 {
		t.Errorf("socket dir holds %v (%v); want nothing left behind", ents, err)
	}
}

// shortTempDir is a temp dir with a path short enough for unix sockets,
// which t.TempDir (named after the test) may not be.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestConformanceGVisor runs the provider's conformance under gVisor
// (runsc, which deploy/setup-host.sh registers in the engine), where a
// pause keeps the sandbox's memory.
func TestConformanceGVisor(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireRuntime(t, "runsc")
	sandboxtest.Conformance(t, func(t *testing.T) sandbox.Provider {
		return newEnv(t, docker.Config{Runtime: "runsc"}).p
	}, testImage)
}
