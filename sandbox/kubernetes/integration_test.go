package kubernetes_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// testImage is the sandbox image of the cluster tests; make test-k8s
// loads it, and the runner image, into the cluster.
const testImage = kubernetes.DefaultImage

// runtimeClasses are the RuntimeClasses every cluster test runs under
// (deploy/kubernetes/local makes both).
var runtimeClasses = []string{"runc", "gvisor"}

// testEnv is a fresh namespace of the test cluster and a provider in it.
type testEnv struct {
	p   *kubernetes.Provider
	cfg kubernetes.Config
	cs  clientset.Interface
	rc  *rest.Config
}

// newEnv makes a namespace that enforces the "restricted" Pod Security
// Standard (so every sandbox pod must pass it) and a provider for it
// under runtimeClass. t.Cleanup deletes the namespace and everything in
// it, whatever state the test left.
func newEnv(t testing.TB, runtimeClass string) *testEnv {
	t.Helper()
	return newEnvWith(t, runtimeClass, nil)
}

// newEnvWith is newEnv with a Config that mutate changed.
func newEnvWith(t testing.TB, runtimeClass string, mutate func(*kubernetes.Config)) *testEnv {
	t.Helper()
	rc := sandboxtest.RequireKubernetes(t)
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ns := sandboxtest.KubeNamespace(t, rc, "sgtest-"+runtimeClass)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg := kubernetes.Config{
		RESTConfig:      rc,
		Namespace:       ns,
		RuntimeClass:    runtimeClass,
		Instance:        "test-" + randomHex(4),
		Key:             key,
		ImagePullPolicy: corev1.PullNever, // images are loaded, never pulled
		Logger:          slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if img := os.Getenv("SANDGATE_TEST_RUNNER_IMAGE"); img != "" {
		cfg.RunnerImage = img
	}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := kubernetes.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &testEnv{p: p, cfg: cfg, cs: cs, rc: rc}
}

// TestConformance runs the provider conformance suite under each
// RuntimeClass, each in a namespace of its own.
func TestConformance(t *testing.T) {
	for _, rtc := range runtimeClasses {
		t.Run(rtc, func(t *testing.T) {
			env := newEnv(t, rtc)
			sandboxtest.Conformance(t, func(*testing.T) sandbox.Provider { return env.p }, testImage)
		})
	}
}

// create makes a sandbox and removes it when t ends (if still there).
func (e *testEnv) create(t testing.TB, spec sandbox.Spec) sandbox.Sandbox {
	t.Helper()
	if spec.Image == "" {
		spec.Image = testImage
	}
	sb, err := e.p.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.p.Remove(ctx, sb.ID()); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("cleanup: Remove(%s): %v", sb.ID(), err)
		}
	})
	return sb
}

// exec runs argv in sb through the runner and returns its stdout and
// exit code.
func exec(t testing.TB, sb sandbox.Sandbox, argv ...string) (string, int) {
	t.Helper()
	c, err := protocol.Dial(t.Context(), sb.Dial)
	if err != nil {
		t.Fatalf("connect to the runner of %s: %v", sb.ID(), err)
	}
	defer c.Close()
	var out []byte
	raw, err := c.Stream(t.Context(), protocol.OpExec, protocol.ExecRequest{Argv: argv, TimeoutMs: 60_000}, func(ev protocol.Event) {
		if ev.Type == protocol.EventStdout {
			out = append(out, ev.Data...)
		}
	})
	if err != nil {
		t.Fatalf("exec %v in %s: %v", argv, sb.ID(), err)
	}
	var res protocol.ExecResult
	if err := protocol.Unmarshal(raw, &res); err != nil {
		t.Fatalf("exec result: %v", err)
	}
	return string(out), res.ExitCode
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestMissingRunnerImage: without the runner image in the cluster,
// Create fails at once with ErrRunnerMissing, says how to load it, and
// leaves nothing behind.
func TestMissingRunnerImage(t *testing.T) {
	env := newEnv(t, "runc")
	cfg := env.cfg
	cfg.RunnerImage = "sandgate/runner-missing:" + randomHex(4)
	p, err := kubernetes.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	owner := "owner-" + randomHex(8)
	sb, err := p.Create(t.Context(), sandbox.Spec{Image: testImage, Owner: owner})
	if err == nil {
		sb.Destroy(context.WithoutCancel(t.Context()))
	}
	if !errors.Is(err, sandbox.ErrRunnerMissing) || !strings.Contains(err.Error(), "load-image.sh "+cfg.RunnerImage) {
		t.Fatalf("Create: err = %v, want ErrRunnerMissing saying how to load %s", err, cfg.RunnerImage)
	}
	t.Logf("Create without the runner image: %v", err)
	if infos, err := p.List(t.Context(), sandbox.Filter{Owner: owner}); err != nil || len(infos) != 0 {
		t.Errorf("List after the failed Create = %+v, %v; want none", infos, err)
	}
}

// TestLongValues: the longest id (64 characters, a 73-character object
// name), and an owner and session that no label value could hold, go
// through the real API server and come back: Get, List by each, Remove.
func TestLongValues(t *testing.T) {
	env := newEnv(t, "runc")
	id := randomHex(32)
	spec := sandbox.Spec{ID: id, Image: testImage, Owner: "o/" + strings.Repeat(randomHex(8)+":", 20),
		Session: "s " + strings.Repeat(randomHex(8)+"/", 20), Network: []string{"example.com:443"}}
	sb := env.create(t, spec)
	if len(sb.ID()) != 64 {
		t.Fatalf("id %q: want 64 characters", sb.ID())
	}
	got, err := env.p.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if gi := got.Info(); gi.Owner != spec.Owner || gi.Session != spec.Session || !slices.Equal(gi.Network, spec.Network) {
		t.Errorf("Get(%s).Info() = %+v, want owner, session and network of %+v", id, gi, spec)
	}
	for _, f := range []sandbox.Filter{{Owner: spec.Owner}, {Session: spec.Session}, {Owner: spec.Owner, Session: spec.Session}} {
		infos, err := env.p.List(t.Context(), f)
		if err != nil || len(infos) != 1 || infos[0].ID != id {
			t.Errorf("List(%+v) = %+v, %v; want %s", f, infos, err, id)
		}
	}
	if err := env.p.Remove(t.Context(), id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
}
