package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/sandbox/kubernetes"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const (
	// localOverlay adapts deploy/kubernetes to the local test cluster.
	localOverlay = "testdata/kubernetes-local"
	// publicURL is the deployed gateways' origin; nothing resolves it
	// (the test reaches each pod by its IP), it names the resource that
	// tokens are for.
	publicURL = "https://sandgate.invalid"
	// readyTimeout bounds the wait for both gateway pods to be Ready.
	readyTimeout = 3 * time.Minute
)

// TestKubernetesDeployment applies deploy/kubernetes, through the local
// cluster's overlay, to two fresh namespaces, and drives an MCP session
// through each of the two gateway replicas, by pod IP (the local cluster
// has no kube-proxy, so the Service has no data path): a tool call runs
// in a gVisor sandbox pod in the sandboxes' namespace. It shows, for
// real: the images run as the manifests say (non-root, read-only, the
// restricted Pod Security Standard), the RBAC suffices, the gateways reach
// the API server through their in-cluster config and NetworkPolicy, the
// sandboxes' policy admits the gateways across namespaces, and one token
// from an external issuer works on either replica, verified against the
// issuer's JWKS over TLS. Each session lasts seconds, well inside the
// two minutes after which, until issue 11's replica work, a replica
// takes the other's sandboxes for orphans (README, "Two replicas").
func TestKubernetesDeployment(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	kc := newKubectl(t)
	m := readManifests(t)
	// Cluster-scoped, and the local cluster has its own: it is checked,
	// not applied, so the test never changes what it did not make.
	rtc, err := cs.NodeV1().RuntimeClasses().Get(t.Context(), m.runtime.Name, metav1.GetOptions{})
	if err != nil || rtc.Handler != m.runtime.Handler {
		t.Fatalf("RuntimeClass %s of the cluster: %v, %v; want handler %s as in deploy/kubernetes", m.runtime.Name, rtc, err, m.runtime.Handler)
	}
	// Pods reach the host where they reach the API server (the node's
	// bridge address): the issuer listens there too.
	host := apiServerHost(t, rc)
	gwNS, sbNS := freshNamespace(t, rc, cs, "sgdeploy"), freshNamespace(t, rc, cs, "sgdeploy-sb")
	iss := startIssuer(t, host, publicURL+"/mcp")
	createRunnerKey(t, cs, gwNS)

	objs := relocate(t, kc.kustomize(t, writeRunOverlay(t, iss)), map[string]string{gatewayNamespace: gwNS, sandboxNamespace: sbNS})
	start := time.Now()
	kc.apply(t, objs)
	pods := waitGatewaysReady(t, cs, gwNS)
	t.Logf("applied; both gateway pods Ready in %.1f s", time.Since(start).Seconds())

	token := iss.token(t, publicURL+"/mcp", "sandbox:exec")
	for _, pod := range pods {
		began := time.Now()
		s := initialize(t, "http://"+net.JoinHostPort(pod.Status.PodIP, "8080")+"/mcp", token)
		res := s.callTool(t, "run_shell", map[string]any{"command": "uname -r; id -u"})
		if res.IsError || res.StructuredContent.ExitCode != 0 || !strings.Contains(res.StructuredContent.Stdout, "gvisor") {
			t.Fatalf("run_shell through %s: %+v; want exit 0 in a gVisor kernel", pod.Name, res)
		}
		t.Logf("%s: initialize and a first run_shell in a new gVisor sandbox in %.1f s", pod.Name, time.Since(began).Seconds())
		checkSandboxPods(t, cs, sbNS)
		// Replicas share a sandbox's allowlist through a patch of its
		// Secret and pod: the Role must allow it.
		if res := s.callTool(t, "sandbox_network", map[string]any{"allow": []string{}}); res.IsError {
			t.Fatalf("sandbox_network through %s (can the gateway's Role patch Secrets and pods?): %+v", pod.Name, res)
		}
		// The gateway reaches the API server there; its sandbox does not.
		res = s.callTool(t, "run_shell", map[string]any{"command": fmt.Sprintf(
			`python3 -c 'import socket; socket.create_connection(("%s", %s), 3)' 2>/dev/null && echo reached || echo blocked`, host, apiServerPort(t, rc))})
		if res.StructuredContent.Stdout != "blocked\n" {
			t.Errorf("a sandbox tried the API server at %s: %+v, want blocked", rc.Host, res.StructuredContent)
		}
		s.close(t)
	}
	waitOnlyPooledPods(t, cs, sbNS)
}

// kubectl runs the cluster's kubectl against the test kubeconfig, with a
// cache of its own.
type kubectl struct{ bin, kubeconfig, cache string }

func newKubectl(t *testing.T) kubectl {
	t.Helper()
	bin := os.Getenv("SANDGATE_KUBECTL")
	if bin == "" {
		bin = filepath.Join(filepath.Dir(sandboxtest.DefaultKubeconfig), "bin", "kubectl")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kubectl (make k8s-up puts it at %s; SANDGATE_KUBECTL names another): %v", bin, err)
	}
	kubeconfig := os.Getenv(sandboxtest.KubeconfigEnv)
	if kubeconfig == "" {
		kubeconfig = sandboxtest.DefaultKubeconfig
	}
	return kubectl{bin: bin, kubeconfig: kubeconfig, cache: t.TempDir()}
}

func (k kubectl) run(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cache}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// kustomize renders the kustomization in dir.
func (k kubectl) kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	return k.run(t, nil, "kustomize", dir)
}

// apply applies manifests, as an operator's kubectl apply -k would.
func (k kubectl) apply(t *testing.T, manifests []byte) {
	t.Helper()
	t.Logf("kubectl apply:\n%s", k.run(t, manifests, "apply", "-f", "-"))
}

// apiServerHost returns the API server's address as the test's
// kubeconfig names it, which must be one pods reach: on the local
// cluster, the node's bridge address.
func apiServerHost(t *testing.T, rc *rest.Config) string {
	t.Helper()
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || ip.IsLoopback() {
		t.Fatalf("the API server is at %s, where pods cannot reach it; the local cluster serves it on its bridge address since deploy/kubernetes/local/up.sh changed: make k8s-down k8s-up", rc.Host)
	}
	return u.Hostname()
}

func apiServerPort(t *testing.T, rc *rest.Config) string {
	t.Helper()
	u, _ := url.Parse(rc.Host)
	return u.Port()
}

// freshNamespace makes a namespace (sandboxtest.KubeNamespace: deleted
// at cleanup) and, at cleanup, waits until it is really gone, so a run
// leaves nothing behind, not even pods still terminating.
func freshNamespace(t *testing.T, rc *rest.Config, cs *clientset.Clientset, prefix string) string {
	t.Helper()
	var name string
	// Registered before KubeNamespace's cleanup, so run after it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for {
			_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			if ctx.Err() != nil {
				t.Errorf("cleanup: namespace %s still there after 3 min: %v", name, err)
				return
			}
			time.Sleep(time.Second)
		}
	})
	name = sandboxtest.KubeNamespace(t, rc, prefix)
	return name
}

// createRunnerKey makes the Secret the gateways read their shared runner
// key from, as the README tells an operator to.
func createRunnerKey(t *testing.T, cs *clientset.Clientset, ns string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sandgate-runner-key", Namespace: ns},
		Data: map[string][]byte{"key": []byte(rand.Text() + rand.Text())}}
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkSandboxPods checks that the sandboxes the gateways made are
// gVisor pods of the sandboxes' namespace.
func checkSandboxPods(t *testing.T, cs *clientset.Clientset, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubernetes.LabelManaged + "=true"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("sandbox pods in %s: %v, %v", ns, pods, err)
	}
	for _, p := range pods.Items {
		if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "gvisor" {
			t.Errorf("sandbox pod %s runs with RuntimeClass %v, want gvisor", p.Name, p.Spec.RuntimeClassName)
		}
	}
}

// waitOnlyPooledPods waits until the gateways removed the sandbox pod of
// every session that ended, as they do when a session ends. What stays
// are the ready pods of their warm pools: made for a pool, unclaimed.
func waitOnlyPooledPods(t *testing.T, cs *clientset.Clientset, ns string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubernetes.LabelManaged + "=true"})
		var owned []string
		if err == nil {
			for _, p := range pods.Items {
				if p.Annotations[kubernetes.AnnotationOwner] != "" || p.Annotations[kubernetes.AnnotationPool] == "" {
					owned = append(owned, p.Name)
				}
			}
			if len(owned) == 0 {
				t.Logf("left: %d ready pods of the gateways' warm pools", len(pods.Items))
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox pods of ended sessions left a minute later: %v, %v", owned, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
