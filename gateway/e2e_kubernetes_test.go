package gateway_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	corev1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// The Kubernetes tier (make test-k8s): the same gateway, through its HTTP
// endpoint and a real MCP client, with each sandbox a pod of the local
// cluster, under runc and under gVisor.

// kubeRuntimes are the RuntimeClasses make k8s-up installs.
var kubeRuntimes = []string{"runc", "gvisor"}

func TestKubernetesToolsEndToEnd(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	for _, runtime := range kubeRuntimes {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			tg := startKubeGateway(t, rc, runtime, nil)
			toolBattery(t, legacyClient(t, tg.URL))
		})
	}
}

// TestKubernetesHostile runs the hostile cases that make sense in a pod:
// a memory bomb and a fork bomb, after which the sandbox answers again,
// and a pod that cannot reach the node. Under runc the bombs stay inside
// the pod's limits and the sandbox lives on with its files; under gVisor
// the host's OOM killer takes the sentry, and with it the whole pod, so
// the next call runs in a replacement whose result says the files are
// gone: never a silent loss.
func TestKubernetesHostile(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	for _, runtime := range kubeRuntimes {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			tg := startKubeGateway(t, rc, runtime, nil)
			c := legacyClient(t, tg.URL)
			bombs := map[string]string{
				"memory bomb": "python3 -c 'b=[]\nwhile True: b.append(bytearray(64<<20))'",
				"fork bomb":   "bomb() { bomb | bomb & }; bomb; sleep 5",
			}
			for _, name := range []string{"memory bomb", "fork bomb"} {
				mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "marker.txt", "content": "still here"}))
				r, res := shell(t, c, bombs[name], map[string]any{"timeout": 30})
				t.Logf("%s: %+v %s", name, r, text(res))
				res = mustOK(t, "run_shell after "+name, call(t, c, "run_shell", map[string]any{"command": "cat marker.txt 2>&1; echo; echo answered"}))
				after := allText(res)
				if !strings.Contains(after, "answered") {
					t.Fatalf("after the %s the sandbox did not answer: %s", name, after)
				}
				switch {
				case strings.Contains(after, "still here"):
					// The sandbox (or its files) survived.
				case strings.Contains(after, "was replaced") && strings.Contains(after, "files, processes and state from before are gone"):
					if runtime == "runc" {
						t.Errorf("after the %s a runc sandbox was replaced: %s", name, after)
					}
				default:
					t.Fatalf("after the %s the workspace lost its file without a word: %s", name, after)
				}
			}
			r, _ := shell(t, c, "python3 -c 'import socket; socket.create_connection((\"10.244.0.1\", 20250), 3)' 2>&1; echo exit=$?", nil)
			if !strings.Contains(r.Stdout, "exit=1") {
				t.Fatalf("a sandbox pod reached the kubelet on the node (or the check did not run): %+v", r)
			}
		})
	}
}

// startKubeGateway starts a gateway whose sandboxes are pods in a fresh
// namespace of the test cluster, under runtime.
func startKubeGateway(t testing.TB, rc *rest.Config, runtime string, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	return kubeInstanceOf(t, rc, runtime).start(t, mutate)
}

// kubeInstance is a Kubernetes instance of the test cluster: a fresh
// namespace, an instance name and a key, which every gateway started on
// it shares, as the replicas of one deployment do.
type kubeInstance kubernetes.Config

func kubeInstanceOf(t testing.TB, rc *rest.Config, runtime string) kubeInstance {
	t.Helper()
	key := make([]byte, kubernetes.MinKeyBytes)
	_, _ = rand.Read(key)
	return kubeInstance{RESTConfig: rc, Namespace: sandboxtest.KubeNamespace(t, rc, "sggw-"+runtime), RuntimeClass: runtime,
		Instance: "t" + randHex(6), Key: key, ImagePullPolicy: corev1.PullNever}
}

// start starts a gateway of the instance with a provider and a var dir
// of its own.
func (k kubeInstance) start(t testing.TB, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	p, err := kubernetes.New(t.Context(), kubernetes.Config(k))
	if err != nil {
		t.Fatal(err)
	}
	tg := &testGateway{Instance: k.Namespace, VarDir: t.TempDir(), Custom: p}
	tg.start(t, "", mutate)
	t.Cleanup(func() { tg.Close() })
	return tg
}

// TestKubernetesPodDeletedFromOutside deletes a session's sandbox pod
// behind the gateway's back (an operator, an eviction, a drained node):
// the session's next call runs in a replacement pod on the same
// workspace volume (the shipped default), says its files were kept, and
// the replacement is audited.
func TestKubernetesPodDeletedFromOutside(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	tg := startKubeGateway(t, rc, "runc", nil)
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "before.txt", "content": "x"}))
	info := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))
	id, _ := info["sandbox_id"].(string)
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	deletePodAndWait(t, cs, tg.Instance, id)
	next := map[string]any{"command": "ls; echo answered"}
	res := call(t, c, "run_shell", next)
	if res.IsError && strings.Contains(text(res), "stopped answering") && strings.Contains(text(res), "its next call replaces it") {
		// The gateway saw no close of the dead pod's connection (its
		// network can go before the close gets out), so it learnt of the
		// loss from the heartbeat while this call waited: the call says
		// so, as the product promises, and the next one is replaced.
		t.Logf("the first call met the lost connection: %s", text(res))
		res = call(t, c, "run_shell", next)
	}
	res = mustOK(t, "run_shell after the pod was deleted", res)
	out := allText(res)
	if !strings.Contains(out, "answered") || !strings.Contains(out, "was replaced") || !strings.Contains(out, "its files are intact") || !strings.Contains(out, "before.txt") {
		t.Fatalf("the call after the pod's deletion: %s", out)
	}
	after := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))
	if after["sandbox_id"] != id || after["container_id"] == info["container_id"] {
		t.Fatalf("replacement: id %v (was %s), pod %v (was %v)", after["sandbox_id"], id, after["container_id"], info["container_id"])
	}
	replaced := false
	for _, e := range auditRecords(t, tg.AuditPath) {
		replaced = replaced || e.Kind == audit.KindSandboxReplace && e.SandboxID == id && e.Summary["workspace_kept"] == "true"
	}
	if !replaced {
		t.Fatal("no sandbox.replace audit record saying the workspace was kept")
	}
}

// TestKubernetesReplicas runs two gateways on one instance (one
// namespace, instance name and key), as two replicas of a deployment: a
// sandbox created through one is used and destroyed through the other,
// a tenant's quota holds across both, and a replica that restarts
// leaves the other's sandboxes running; a sessionless client has one
// default sandbox whichever replica it calls.
func TestKubernetesReplicas(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	inst := kubeInstanceOf(t, rc, "runc")
	replicated := func(c *gateway.Config) { c.Replicated, c.MaxSandboxesPerTenant = true, 2 }
	a, b := inst.start(t, replicated), inst.start(t, replicated)
	ca, cb := modernClient(t, a.URL), modernClient(t, b.URL)

	t.Run("create on one, use and destroy on the other", func(t *testing.T) {
		id := createOn(t, ca, nil)
		mustOK(t, "write_file on A", call(t, ca, "write_file", map[string]any{"sandbox_id": id, "path": "from-a.txt", "content": "written on A"}))
		if r, _ := shell(t, cb, "cat from-a.txt", map[string]any{"sandbox_id": id}); r.ExitCode != 0 || r.Stdout != "written on A" {
			t.Fatalf("run_shell on B: %+v", r)
		}
		mustOK(t, "sandbox_destroy on B", call(t, cb, "sandbox_destroy", map[string]any{"sandbox_id": id}))
		res, err := callErr(t.Context(), ca, "run_shell", map[string]any{"sandbox_id": id, "command": "true"})
		if err != nil || !res.IsError || !strings.Contains(text(res), "sandbox not found") {
			t.Fatalf("run_shell on A after B destroyed the sandbox: %v %q; want not found", err, text(res))
		}
	})

	t.Run("pause on one, resume on the other", func(t *testing.T) {
		id := createOn(t, ca, nil)
		mustOK(t, "write_file on A", call(t, ca, "write_file", map[string]any{"sandbox_id": id, "path": "kept.txt", "content": "kept"}))
		// B holds a connection to the runner too.
		if r, _ := shell(t, cb, "cat kept.txt", map[string]any{"sandbox_id": id}); r.Stdout != "kept" {
			t.Fatalf("run_shell on B: %+v", r)
		}
		mustOK(t, "sandbox_pause on A", call(t, ca, "sandbox_pause", map[string]any{"sandbox_id": id}))
		st := structuredAs[map[string]any](t, mustOK(t, "sandbox_info on B", call(t, cb, "sandbox_info", map[string]any{"sandbox_id": id})))
		if st["state"] != sandbox.StatePaused {
			t.Errorf("sandbox_info on B of a sandbox A paused: %v, want paused", st)
		}
		res := mustOK(t, "run_shell on B after A paused", call(t, cb, "run_shell", map[string]any{"sandbox_id": id, "command": "cat kept.txt"}))
		if out := allText(res); !strings.Contains(out, "kept") || !strings.Contains(out, "was paused") {
			t.Fatalf("B's call on a sandbox A paused: %s; want its file and that it was resumed", out)
		}
		if r, _ := shell(t, ca, "cat kept.txt", map[string]any{"sandbox_id": id}); r.Stdout != "kept" {
			t.Fatalf("run_shell on A after B resumed it: %+v", r)
		}
		mustOK(t, "sandbox_destroy on A", call(t, ca, "sandbox_destroy", map[string]any{"sandbox_id": id}))
	})

	var onB string
	t.Run("quota across replicas", func(t *testing.T) {
		first := createOn(t, ca, nil)
		onB = createOn(t, cb, nil)
		res := call(t, ca, "sandbox_create", nil)
		if !res.IsError || !strings.Contains(text(res), "limit 2") {
			t.Fatalf("a third sandbox on A: %q; want the quota error", text(res))
		}
		mustOK(t, "sandbox_destroy on B", call(t, cb, "sandbox_destroy", map[string]any{"sandbox_id": first}))
	})

	t.Run("a restarted replica leaves the other's sandboxes", func(t *testing.T) {
		// A's own sessionless sandbox outlives A's graceful stop too.
		onA := createOn(t, ca, nil)
		mustOK(t, "write_file on A", call(t, ca, "write_file", map[string]any{"sandbox_id": onA, "path": "kept.txt", "content": "kept"}))
		a.Close()
		logs := []string{a.AuditPath, b.AuditPath}
		a = inst.start(t, replicated)
		for name, c := range map[string]*client.Client{"B": cb, "the restarted A": modernClient(t, a.URL)} {
			if r, _ := shell(t, c, "echo alive", map[string]any{"sandbox_id": onB}); r.Stdout != "alive\n" {
				t.Fatalf("B's sandbox through %s after A restarted: %+v", name, r)
			}
			if r, _ := shell(t, c, "cat kept.txt", map[string]any{"sandbox_id": onA}); r.Stdout != "kept" {
				t.Fatalf("A's sandbox through %s after A restarted: %+v", name, r)
			}
		}
		mustOK(t, "sandbox_destroy on B", call(t, cb, "sandbox_destroy", map[string]any{"sandbox_id": onA}))
		for _, path := range append(logs, a.AuditPath) {
			if rep, err := audit.VerifyFile(path); err != nil || rep.FirstBroken != 0 {
				t.Errorf("audit log %s: %+v, %v", path, rep, err)
			}
		}
	})

	t.Run("one default sandbox whichever replica", func(t *testing.T) {
		a := inst.start(t, replicated) // the restarted A ended with its subtest
		da, db := namedModernClient(t, a.URL, "k8s-client"), namedModernClient(t, b.URL, "k8s-client")
		res := mustOK(t, "write_file on A", call(t, da, "write_file", map[string]any{"path": "d.txt", "content": "default on A"}))
		id := noteID(t, res, createdDefault)[0]
		res = mustOK(t, "read_file on B", call(t, db, "read_file", map[string]any{"path": "d.txt"}))
		if got := noteID(t, res, usingDefault)[0]; got != id || !strings.Contains(text(res), "default on A") {
			t.Fatalf("B's default %s (want A's %s): %s", got, id, text(res))
		}
		mustOK(t, "sandbox_destroy on B", call(t, db, "sandbox_destroy", nil))
	})
}

// TestKubernetesEscapeProbes runs the escape attempts that mean the same
// in a pod as in a container (escapeProbes), under runc and gVisor, and
// the ones particular to a pod: no service-account token, no route out.
func TestKubernetesEscapeProbes(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	for _, runtime := range kubeRuntimes {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			tg := startKubeGateway(t, rc, runtime, nil)
			c := legacyClient(t, tg.URL)
			cases := append(escapeProbes(), []hostileCase{
				{name: "no service-account token", command: `ls /var/run/secrets/kubernetes.io/serviceaccount 2>&1; test ! -e /var/run/secrets/kubernetes.io`,
					check: prints("No such file"), outcome: audit.OutcomeOK},
				{name: "cloud metadata", command: pyConnect("169.254.169.254", "80"), check: fails("Network is unreachable", "timed out", "Connection refused")},
				// A pod spec has no rlimits; the runner sets Docker's ulimits.
				{name: "rlimits as under Docker", command: `python3 -c 'import resource as r; print(*[r.getrlimit(x)[1] for x in (r.RLIMIT_NOFILE, r.RLIMIT_FSIZE, r.RLIMIT_CORE)])'`,
					check: prints(fmt.Sprintf("%d %d 0\n", sandbox.DefaultLimits.NoFile, sandbox.DefaultLimits.WorkspaceBytes)), outcome: audit.OutcomeOK},
			}...)
			if runtime == "gvisor" {
				r, _ := shell(t, c, "dmesg | head -1", nil)
				if !strings.Contains(r.Stdout, "Starting gVisor") {
					t.Fatalf("the pod's kernel is not gVisor's: %+v", r)
				}
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r, res := shell(t, c, tc.command, nil)
					t.Logf("%s: exit %d, stdout %q, stderr %q", tc.name, r.ExitCode, cut(r.Stdout, 200), cut(r.Stderr, 200))
					if runtime == "gvisor" && gvisorAnswers[tc.name] {
						// gVisor's own kernel answers these; they never reach
						// the host's, which is the point of it.
						return
					}
					if tc.outcome != audit.OutcomeOK && !res.IsError {
						t.Errorf("want isError: %s", text(res))
					}
					tc.check(t, r, res)
				})
			}
		})
	}
}

// gvisorAnswers are the escape probes whose host-kernel meaning gVisor
// takes away: its own kernel implements them for the sandbox (a user
// namespace, a keyring, its own /sys), and its /proc does not show the
// host's seccomp filter and no-new-privileges flag, which apply to the
// sentry process outside. Under gVisor the test checks instead that the
// pod's kernel is gVisor's.
var gvisorAnswers = map[string]bool{
	"no capabilities, no new privileges, seccomp on": true,
	"unshare user namespace":                         true,
	"keyctl":                                         true,
	"write to /sys":                                  true,
}
