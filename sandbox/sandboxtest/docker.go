package sandboxtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// pingTimeout bounds the Docker presence check; a local engine answers in
// milliseconds.
const pingTimeout = 10 * time.Second

// pingDocker is the engine check, done once per test process.
var pingDocker = sync.OnceValue(func() error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	_, err = cli.Ping(ctx)
	return err
})

// Required reports whether tests that need Docker must fail instead of
// skipping without it: in CI (CI set to anything) or with REQUIRE_DOCKER=1.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("REQUIRE_DOCKER") == "1"
}

// RequireDocker skips t when the Docker engine cannot be reached, unless
// Required, in which case t fails: CI must never pass by skipping. In
// -short mode (make test-short: unit tests only) it always skips.
func RequireDocker(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the Docker engine; skipped in -short mode")
	}
	if err := pingDocker(); err != nil {
		unavailable(t, "Docker engine unreachable (start dockerd or set DOCKER_HOST): %v", err)
	}
}

// RequireImage calls RequireDocker, then skips or fails t, by the same
// rule, when image is not present in the engine.
func RequireImage(t testing.TB, image string) {
	t.Helper()
	RequireDocker(t)
	cli := dockerClient(t)
	_, err := cli.ImageInspect(t.Context(), image)
	switch {
	case cerrdefs.IsNotFound(err):
		unavailable(t, "image %s missing (run `make images`)", image)
	case err != nil:
		t.Fatalf("inspect image %s: %v", image, err)
	}
}

// RequireRuntime calls RequireDocker, then skips or fails t, by the same
// rule, when the engine has no OCI runtime called name, or runs without
// the experimental features that checkpoints need (deploy/setup-gvisor.sh
// registers gVisor's runsc with them).
func RequireRuntime(t testing.TB, name string) {
	t.Helper()
	RequireDocker(t)
	info, err := dockerClient(t).Info(t.Context())
	if err != nil {
		t.Fatalf("docker info: %v", err)
	}
	if _, ok := info.Runtimes[name]; !ok || !info.ExperimentalBuild {
		unavailable(t, "the Docker engine has no runtime %q with checkpoints (experimental: %v); run make setup-gvisor", name, info.ExperimentalBuild)
	}
}

// dockerClient is a client of the engine the environment names, closed
// when t ends.
func dockerClient(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// DockerCLI runs the docker CLI with args and returns its trimmed
// combined output, failing t on an error.
func DockerCLI(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// unavailable fails t if Required, else skips it.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format+" [CI or REQUIRE_DOCKER=1 is set, so this fails instead of skipping]", args...)
	}
	t.Skipf(format, args...)
}
