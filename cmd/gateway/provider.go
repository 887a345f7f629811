package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// Sandbox providers --provider selects.
const (
	providerDocker     = "docker"
	providerKubernetes = "kubernetes"
)

// kubeConfig is what only the Kubernetes provider needs.
type kubeConfig struct {
	// Kubeconfig is a kubeconfig file; empty: the pod's own service
	// account when running in a cluster, else $KUBECONFIG.
	Kubeconfig     string
	Namespace      string // empty: the gateway pod's own namespace
	RuntimeClass   string // pods' runtimeClassName; empty: the cluster's default
	WorkspaceClass string // StorageClass of the workspace claims; empty: the default class
	RunnerImage    string
	// KeyFile holds the key each sandbox's runner secret is derived from;
	// every replica of an instance must read the same key. Default
	// VAR/runner.key, made on first start.
	KeyFile    string
	PullPolicy string
	// GatewayNamespace is where the gateway pods run, which the sandboxes'
	// NetworkPolicy admits; empty: the gateway pod's own namespace in a
	// cluster, else Namespace.
	GatewayNamespace string
	// CPURequest and MemoryRequest are each sandbox pod's requests, as
	// Kubernetes quantities ("25m", "64Mi"); empty: the provider's
	// defaults. They decide how many sandboxes the scheduler puts on a
	// node; the limits come from --cpus and --memory.
	CPURequest, MemoryRequest string
}

// closer is what serve defers after making a provider.
type closer interface{ Close() error }

// newProvider makes the sandbox provider cfg.Provider names.
func newProvider(ctx context.Context, cfg config, gcfg gateway.Config, log *slog.Logger) (sandbox.Provider, closer, error) {
	switch cfg.Provider {
	case providerDocker:
		p, err := docker.New(ctx, docker.Config{RunnerPath: cfg.RunnerPath, SocketDir: gcfg.SocketDir(), Image: gcfg.Image,
			Instance: cfg.Instance, Runtime: cfg.Runtime, CAFile: cfg.SandboxCA, WorkspaceDir: filepath.Join(gcfg.VarDir, "workspaces"), WorkspaceBackend: cfg.WorkspaceBackend,
			Holder: fmt.Sprintf("serving %s, var %s", gcfg.Addr, gcfg.VarDir)}, log)
		if err != nil {
			return nil, nil, err
		}
		return p, p, nil
	case providerKubernetes:
		p, err := newKubernetes(ctx, cfg, gcfg, log)
		if err != nil {
			return nil, nil, err
		}
		return p, p, nil
	}
	return nil, nil, fmt.Errorf("--provider %q: want %s or %s", cfg.Provider, providerDocker, providerKubernetes)
}

func newKubernetes(ctx context.Context, cfg config, gcfg gateway.Config, log *slog.Logger) (*kubernetes.Provider, error) {
	k := cfg.Kube
	rc, inCluster, err := restConfig(k.Kubeconfig)
	if err != nil {
		return nil, err
	}
	own := podNamespace
	if !inCluster {
		own = nil
	}
	ns, gatewayNS, err := namespaces(k, own)
	if err != nil {
		return nil, err
	}
	keyFile := k.KeyFile
	if keyFile == "" {
		keyFile = filepath.Join(gcfg.VarDir, "runner.key")
	}
	key, err := loadOrMakeKey(keyFile)
	if err != nil {
		return nil, err
	}
	return kubernetes.New(ctx, kubernetes.Config{RESTConfig: rc, Namespace: ns, Image: gcfg.Image, RunnerImage: k.RunnerImage,
		RuntimeClass: k.RuntimeClass, Instance: cfg.Instance, Key: key, ImagePullPolicy: pullPolicy(k.PullPolicy), Logger: log,
		GatewayNamespace: gatewayNS, WorkspaceClass: k.WorkspaceClass, CPURequest: quantity(k.CPURequest), MemoryRequest: quantity(k.MemoryRequest)})
}

// namespaces decides the namespace of the sandbox pods and that of the
// gateway pods, which the sandboxes' NetworkPolicy admits. own finds the
// gateway pod's namespace; nil outside a cluster. A flag wins; in a
// cluster an empty one is the pod's own namespace. Outside a cluster the
// sandbox namespace must be named, and an unnamed gateway namespace stays
// empty (the sandbox namespace): a gateway on a node reaches the pods
// whatever the policy's selector says.
func namespaces(k kubeConfig, own func() (string, error)) (sandboxes, gateways string, err error) {
	sandboxes, gateways = k.Namespace, k.GatewayNamespace
	if own != nil && (sandboxes == "" || gateways == "") {
		ns, err := own()
		if err != nil {
			return "", "", err
		}
		sandboxes, gateways = cmp.Or(sandboxes, ns), cmp.Or(gateways, ns)
	}
	if sandboxes == "" {
		return "", "", errors.New("--k8s-namespace is required outside a cluster: name the namespace that holds the sandbox pods")
	}
	return sandboxes, gateways, nil
}

// restConfig finds the API server: the kubeconfig named, else the pod's
// service account in a cluster, else $KUBECONFIG. It reports whether it
// is the in-cluster one.
func restConfig(kubeconfig string) (*rest.Config, bool, error) {
	if kubeconfig == "" {
		if rc, err := rest.InClusterConfig(); err == nil {
			return rc, true, nil
		}
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		return nil, false, errors.New("--provider kubernetes outside a cluster needs --kubeconfig FILE (or KUBECONFIG)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, false, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, false, nil
}

// podNamespace is the namespace of the pod the gateway runs in.
func podNamespace() (string, error) {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "", fmt.Errorf("find the gateway pod's namespace (or pass --k8s-namespace and --k8s-gateway-namespace): %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// loadOrMakeKey reads the runner key from path, making a random one (0600,
// written atomically) when none exists yet.
func loadOrMakeKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		if len(key) < kubernetes.MinKeyBytes {
			return nil, fmt.Errorf("runner key %s holds %d bytes, want at least %d", path, len(key), kubernetes.MinKeyBytes)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read runner key: %w", err)
	}
	key = make([]byte, 32)
	_, _ = rand.Read(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("make runner key: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("make runner key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("make runner key: %w", err)
	}
	return key, nil
}

// pullPolicy converts a --k8s-pull-policy that parseConfig checked.
func pullPolicy(s string) corev1.PullPolicy { return corev1.PullPolicy(s) }

// check checks the Kubernetes flags that can be checked before
// anything connects.
func (k kubeConfig) check() error {
	switch k.PullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("--k8s-pull-policy %q: want Always, IfNotPresent or Never", k.PullPolicy)
	}
	for flag, v := range map[string]string{"--k8s-cpu-request": k.CPURequest, "--k8s-memory-request": k.MemoryRequest} {
		if _, err := resource.ParseQuantity(v); v != "" && err != nil {
			return fmt.Errorf("%s %q: want a Kubernetes quantity such as 25m (CPU) or 64Mi (memory)", flag, v)
		}
	}
	return nil
}

// quantity converts a request that check accepted; empty is zero, which
// the provider replaces with its default.
func quantity(s string) resource.Quantity {
	if s == "" {
		return resource.Quantity{}
	}
	return resource.MustParse(s)
}
