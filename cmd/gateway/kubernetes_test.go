package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

func TestKubernetesFlags(t *testing.T) {
	c, err := parseConfig([]string{"--provider", "kubernetes", "--k8s-namespace", "sb", "--k8s-runtime-class", "gvisor"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider != providerKubernetes || c.Kube.Namespace != "sb" || c.Kube.RuntimeClass != "gvisor" || !c.Gateway.Replicated ||
		len(c.Gateway.Pool) != 1 || c.Gateway.Pool[c.Gateway.Image] != gateway.DefaultReplicaPoolSize {
		t.Fatalf("config: provider %q, kube %+v, pool %v, replicated %v (want a pool of %d of the default image, replicated)",
			c.Provider, c.Kube, c.Gateway.Pool, c.Gateway.Replicated, gateway.DefaultReplicaPoolSize)
	}
	if d, err := parseConfig(nil, &bytes.Buffer{}); err != nil || d.Gateway.Replicated {
		t.Fatalf("docker: replicated %v, %v; want a gateway of its own", d.Gateway.Replicated, err)
	}
	for flags, want := range map[string]int{"--pool-size=3": 3, "--pool-size=0": 0} {
		c, err := parseConfig([]string{"--provider", "kubernetes", flags}, &bytes.Buffer{})
		if err != nil || c.Gateway.Pool[c.Gateway.Image] != want {
			t.Errorf("%s on Kubernetes: pool %v, %v; want %d of the default image", flags, c.Gateway.Pool, err, want)
		}
	}
	for _, bad := range [][]string{{"--k8s-pull-policy", "Sometimes"}, {"--k8s-cpu-request", "lots"}, {"--k8s-memory-request", "64 MiB"}} {
		if _, err := parseConfig(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	t.Setenv("KUBECONFIG", "")
	_, _, err = newProvider(t.Context(), config{Provider: providerKubernetes}, c.Gateway, nil)
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("kubernetes without a kubeconfig outside a cluster: %v", err)
	}
	if _, _, err = newProvider(t.Context(), config{Provider: "nomad"}, c.Gateway, nil); err == nil || !strings.Contains(err.Error(), "docker or kubernetes") {
		t.Errorf("unknown provider: %v", err)
	}
}

// TestKubernetesNamespaces: the sandbox and gateway namespaces come from
// the flags, else, in a cluster, from the gateway pod's own namespace,
// which is read only when needed.
func TestKubernetesNamespaces(t *testing.T) {
	c, err := parseConfig([]string{"--provider", "kubernetes", "--k8s-gateway-namespace", "gw"}, &bytes.Buffer{})
	if err != nil || c.Kube.GatewayNamespace != "gw" {
		t.Fatalf("--k8s-gateway-namespace gw: %+v, %v", c.Kube, err)
	}
	pod := func() (string, error) { return "own", nil }
	unreadable := func() (string, error) { return "", errors.New("no service account mount") }
	tests := []struct {
		name               string
		sandboxes, gateway string // flags
		own                func() (string, error)
		want               [2]string // sandbox namespace, gateway namespace
		wantErr            string
	}{
		{name: "in a cluster, no flags", own: pod, want: [2]string{"own", "own"}},
		{name: "in a cluster, sandboxes apart", sandboxes: "sb", own: pod, want: [2]string{"sb", "own"}},
		{name: "in a cluster, both named", sandboxes: "sb", gateway: "gw", own: unreadable, want: [2]string{"sb", "gw"}},
		{name: "in a cluster, pod namespace unreadable", sandboxes: "sb", own: unreadable, wantErr: "no service account mount"},
		{name: "outside, sandboxes named", sandboxes: "sb", want: [2]string{"sb", ""}},
		{name: "outside, both named", sandboxes: "sb", gateway: "gw", want: [2]string{"sb", "gw"}},
		{name: "outside, no sandbox namespace", gateway: "gw", wantErr: "--k8s-namespace is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, gw, err := namespaces(kubeConfig{Namespace: tt.sandboxes, GatewayNamespace: tt.gateway}, tt.own)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, %q, %v; want an error saying %q", sb, gw, err, tt.wantErr)
				}
				return
			}
			if err != nil || [2]string{sb, gw} != tt.want {
				t.Fatalf("got %q, %q, %v; want %q", sb, gw, err, tt.want)
			}
		})
	}
}

// TestKubernetesGatewayBinary runs the real gateway binary with
// --provider kubernetes against the test cluster: a session's tool calls
// run in a gVisor pod, the runner key is made 0600 on first start, and
// shutdown leaves no pod behind.
func TestKubernetesGatewayBinary(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	ns := sandboxtest.KubeNamespace(t, rc, "sgbin")
	kubeconfig := os.Getenv(sandboxtest.KubeconfigEnv)
	if kubeconfig == "" {
		kubeconfig = sandboxtest.DefaultKubeconfig
	}
	bin := buildGateway(t)
	varDir := t.TempDir()
	p := startProc(t, bin, "--var", varDir, "--instance", "bin"+randHex(4), "--provider", "kubernetes", "--kubeconfig", kubeconfig,
		"--k8s-namespace", ns, "--k8s-runtime-class", "gvisor", "--k8s-pull-policy", "Never")
	c := sessionWithFile(t, p.url)
	res := callTool(t, c, "run_shell", map[string]any{"command": "cat mine.txt; echo; uname -r"})
	if res.IsError || !strings.Contains(textOf(res), "first gateway") || !strings.Contains(textOf(res), "gvisor") {
		t.Fatalf("run_shell in a gVisor pod: %s", textOf(res))
	}
	st, err := os.Stat(filepath.Join(varDir, "runner.key"))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("runner key: %v %v", st, err)
	}
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods while the session lives: %v, %v", pods, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the gateway did not stop within 2 minutes of SIGTERM:\n%s", p.logs())
	}
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods left after shutdown: %d, %v", len(pods.Items), err)
	}
}

// textOf joins a result's text contents.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
