// Package deploy_test brings up deploy/compose.yaml against the real
// Docker engine and makes one tool call through the containerized gateway,
// and deploy/kubernetes on the Kubernetes test cluster, with a tool call
// through each gateway replica.
package deploy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const (
	sandboxImage = "sandgate/base:latest"
	// dockerSocket is the engine socket compose.yaml mounts.
	dockerSocket = "/var/run/docker.sock"
	// composeTimeout bounds one docker-compose command: up --build
	// (a scratch image of two files) or down (the gateway's graceful stop,
	// up to its 70 s stop_grace_period).
	composeTimeout = 3 * time.Minute
	// healthyTimeout bounds the wait for /healthz after up.
	healthyTimeout = time.Minute
)

func TestCompose(t *testing.T) {
	sandboxtest.RequireImage(t, sandboxImage)
	requireCompose(t)
	p := newProject(t)

	if out, err := p.compose(t.Context(), "up", "-d", "--build"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	p.waitHealthy(t)
	p.waitContainerHealthy(t)
	p.waitMetric(t, `sandgate_pool_ready{image="sandgate/base:latest"} 2`)

	s := initialize(t, p.baseURL()+"/mcp", p.token(t))
	res := s.callTool(t, "run_shell", map[string]any{"command": "echo compose-ok"})
	if res.IsError || res.StructuredContent.ExitCode != 0 || !strings.Contains(res.StructuredContent.Stdout, "compose-ok") {
		t.Fatalf("run_shell: want exit 0 and compose-ok on stdout, got %+v", res)
	}
	// The session's sandbox came from the pool, which refills behind it.
	p.waitMetric(t, `sandgate_pool_claims_total{result="hit"} 1`)
	p.waitMetric(t, `sandgate_pool_ready{image="sandgate/base:latest"} 2`)
	if n := len(p.sandboxes(t)); n != 3 {
		t.Fatalf("while the session lives: %d containers labelled %s=%s, want 3 (the session's and a pool of 2)", n, docker.LabelInstance, p.instance)
	}
	// The containerized gateway made the workspace on disk: an ext4 of
	// its own, mounted from an image under the var dir.
	res = s.callTool(t, "run_shell", map[string]any{"command": "stat -f -c %T /workspace; df -B1M --output=size /workspace | tail -1"})
	if res.IsError || !strings.HasPrefix(res.StructuredContent.Stdout, "ext2/ext3\n") {
		t.Fatalf("/workspace of a compose sandbox: %+v, want an ext4 file system on disk", res.StructuredContent)
	}

	// Metrics are on their own loopback port and saw the calls above.
	metrics := p.get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metricsPort))
	if !strings.Contains(metrics, `sandgate_tool_calls_total{outcome="ok",tool="run_shell"} 2`) {
		t.Errorf("/metrics does not count the two run_shell calls:\n%s", grepLines(metrics, "sandgate_tool_calls_total"))
	}

	// down stops the gateway with SIGTERM: it must end the session and
	// remove its sandbox before it exits.
	if out, err := p.compose(t.Context(), "down"); err != nil {
		t.Fatalf("docker-compose down: %v\n%s", err, out)
	}
	if left := p.sandboxes(t); len(left) != 0 {
		t.Fatalf("after down: %d containers labelled %s=%s remain: %v", len(left), docker.LabelInstance, p.instance, left)
	}
	if mnts, _ := filepath.Glob(filepath.Join(p.varDir(), "workspaces", "*")); len(mnts) != 0 {
		t.Fatalf("after down: workspaces left on the host: %v", mnts)
	}
	// The audit log lives in the var dir mounted at its host path.
	rep, err := audit.VerifyFile(gateway.Config{VarDir: p.varDir()}.AuditPath())
	if err != nil || rep.FirstBroken != 0 || rep.Records == 0 {
		t.Fatalf("audit log: %+v, %v; want an intact, non-empty chain", rep, err)
	}
}

// requireCompose skips or fails t, by the sandboxtest rule, without
// docker-compose.
func requireCompose(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker-compose"); err != nil {
		if sandboxtest.Required() {
			t.Fatalf("docker-compose not found (make setup installs it) [CI or REQUIRE_DOCKER=1 is set, so this fails instead of skipping]")
		}
		t.Skip("docker-compose not found (make setup installs it)")
	}
}

// project is one docker-compose project of compose.yaml with a name,
// port, SANDGATE_HOME and instance label of its own, so that it never
// touches another deployment on the same engine.
type project struct {
	name     string
	instance string
	home     string
	port     int
	// metricsPort is where the gateway serves /metrics.
	metricsPort int
	env         []string
	cli         *client.Client
	bin         string // the host-built static binaries
}

// newProject builds the static binaries into a private build context,
// lays out SANDGATE_HOME as `make compose` does, and registers the
// teardown.
func newProject(t *testing.T) *project {
	t.Helper()
	suffix := randHex(t, 4)
	p := &project{name: "sgc" + suffix, instance: "compose-" + suffix, port: freePort(t), metricsPort: freePort(t)}
	// Removed after the teardown below, which is registered later.
	home := t.TempDir()
	p.home = home
	var err error
	if p.cli, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation()); err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { p.cli.Close() })
	buildContext := t.TempDir()
	p.bin = filepath.Join(buildContext, "bin")
	buildBinaries(t, buildContext)
	copyFile(t, "Dockerfile", filepath.Join(buildContext, "deploy", "Dockerfile"), 0o644)
	copyFile(t, filepath.Join(buildContext, "bin", "runner"), filepath.Join(home, "bin", "runner"), 0o755)
	// Made here, not by Docker, so that it is ours rather than root's.
	if err := os.Mkdir(p.varDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	shareVarDir(t, p.varDir())

	// The gateway runs as the caller, so that a non-root caller can read
	// the audit log and remove SANDGATE_HOME. Later entries win over any
	// SANDGATE_* the caller has set.
	p.env = append(os.Environ(),
		"SANDGATE_HOME="+home,
		fmt.Sprintf("SANDGATE_PORT=%d", p.port),
		fmt.Sprintf("SANDGATE_METRICS_PORT=%d", p.metricsPort),
		// A small warm pool: enough to show a session starting from it.
		"SANDGATE_POOL_SIZE=2",
		"SANDGATE_INSTANCE="+p.instance,
		"SANDGATE_BUILD_CONTEXT="+buildContext,
		// A tag of its own, removed by the teardown, so that a test run
		// never replaces the image a real deployment runs.
		"SANDGATE_GATEWAY_IMAGE=sandgate/gateway:"+p.name,
		fmt.Sprintf("SANDGATE_UID=%d", os.Getuid()),
		fmt.Sprintf("SANDGATE_GID=%d", os.Getgid()),
		fmt.Sprintf("SANDGATE_DOCKER_GID=%d", dockerSocketGroup(t)),
	)
	// Teardown runs on its own context: t.Context is already cancelled.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), composeTimeout)
		defer cancel()
		if t.Failed() {
			logs, _ := p.compose(ctx, "logs", "--no-color")
			t.Logf("docker-compose logs:\n%s", logs)
		}
		if out, err := p.compose(ctx, "down", "-v", "--remove-orphans", "--rmi", "all"); err != nil {
			t.Errorf("docker-compose down -v --rmi all: %v\n%s", err, out)
		}
		p.removeSandboxes(ctx, t)
	})
	return p
}

// shareVarDir makes dir a shared mount, as `make compose` does, so the
// workspace mounts the containerized gateway makes reach the host's
// dockerd (compose.yaml mounts it rshared). Only root can; a non-root
// gateway falls back to tmpfs workspaces and needs nothing shared, but
// Docker still refuses rshared on a private mount, so then the test skips.
func shareVarDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("compose.yaml mounts the var dir rshared, which needs root to set up")
	}
	for _, args := range [][]string{{"--bind", dir, dir}, {"--make-shared", dir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v\n%s", args, err, out)
		}
	}
	// Registered before the project's teardown, so it runs after
	// docker-compose down and before the temp dir's removal.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
}

// compose runs docker-compose on this project.
func (p *project) compose(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, composeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", p.name, "-f", "compose.yaml"}, args...)...)
	cmd.Env = p.env
	return cmd.CombinedOutput()
}

func (p *project) baseURL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.port) }

func (p *project) varDir() string { return filepath.Join(p.home, "var") }

// waitHealthy polls /healthz until it answers 200. The gateway binds first
// and serves once reconciliation is done, so early probes may hang: each
// has a short timeout of its own.
func (p *project) waitHealthy(t *testing.T) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(healthyTimeout)
	var last string
	for time.Now().Before(deadline) {
		resp, err := hc.Get(p.baseURL() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("GET /healthz: not 200 within %v (last: %s)", healthyTimeout, last)
}

// waitContainerHealthy waits for Docker to call the gateway container
// healthy: compose.yaml's healthcheck (`gateway healthcheck` run inside
// it) passed.
func (p *project) waitContainerHealthy(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(healthyTimeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := p.compose(t.Context(), "ps", "-q", "gateway")
		if err != nil {
			t.Fatalf("docker-compose ps: %v\n%s", err, out)
		}
		if id := strings.TrimSpace(string(out)); id != "" {
			c, err := p.cli.ContainerInspect(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if c.State.Health == nil {
				t.Fatal("the gateway container has no healthcheck")
			}
			if last = c.State.Health.Status; last == "healthy" {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("gateway container not healthy within %v (last status %q)", healthyTimeout, last)
}

// waitMetric waits for a line of /metrics to read exactly line.
func (p *project) waitMetric(t *testing.T, line string) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metricsPort)
	deadline := time.Now().Add(healthyTimeout)
	var body string
	for time.Now().Before(deadline) {
		if body = p.get(t, url); slices.Contains(strings.Split(body, "\n"), line) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	name, _, _ := strings.Cut(line, "{")
	t.Fatalf("/metrics has no line %q within %v:\n%s", line, healthyTimeout, grepLines(body, name))
}

// get fetches url and returns its body, failing t on anything but 200.
func (p *project) get(t *testing.T, url string) string {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return string(b)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// sandboxes lists every container, running or not, of this project's
// gateway instance.
func (p *project) sandboxes(t *testing.T) []string {
	t.Helper()
	names, err := p.listSandboxes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// removeSandboxes force-removes what a failed run left behind.
func (p *project) removeSandboxes(ctx context.Context, t *testing.T) {
	names, err := p.listSandboxes(ctx)
	if err != nil {
		t.Errorf("list leftover sandboxes: %v", err)
	}
	for _, name := range names {
		if err := p.cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			t.Errorf("remove leftover sandbox %s: %v", name, err)
		}
	}
}

func (p *project) listSandboxes(ctx context.Context) ([]string, error) {
	list, err := p.cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstance+"="+p.instance)),
	})
	if err != nil {
		return nil, fmt.Errorf("list containers of instance %s: %w", p.instance, err)
	}
	var names []string
	for _, c := range list {
		names = append(names, strings.TrimPrefix(c.Names[0], "/"))
	}
	return names, nil
}

// dockerSocketGroup returns the group of the Docker socket that
// compose.yaml mounts, which a non-root gateway needs to use it.
func dockerSocketGroup(t *testing.T) uint32 {
	t.Helper()
	fi, err := os.Stat(dockerSocket)
	if err != nil {
		t.Fatalf("compose.yaml mounts %s: %v", dockerSocket, err)
	}
	return fi.Sys().(*syscall.Stat_t).Gid
}

// buildBinaries builds static gateway and runner binaries into dir/bin,
// where deploy/Dockerfile expects them relative to its build context.
func buildBinaries(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", filepath.Join(dir, "bin")+"/", "./cmd/gateway", "./cmd/runner")
	cmd.Dir = ".." // the module root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build static binaries: %v\n%s", err, out)
	}
}

// copyFile copies src to dst with mode perm, creating dst's parents.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, perm); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; the sandbox user needs
	// the runner's o+rx bits (see docker.checkRunner).
	if err := os.Chmod(dst, perm); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
