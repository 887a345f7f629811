package sandboxtest

import (
	"context"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// KubernetesEnv, set to 1, runs the Kubernetes tier (make test-k8s).
	KubernetesEnv = "SANDGATE_K8S"
	// KubeconfigEnv names the kubeconfig of the test cluster; default
	// DefaultKubeconfig.
	KubeconfigEnv = "SANDGATE_KUBECONFIG"
	// DefaultKubeconfig is where make k8s-up writes the local cluster's
	// admin kubeconfig.
	DefaultKubeconfig = "/var/lib/sandgate-k8s/kubeconfig"
)

// kubeconfig loads and checks the test cluster's kubeconfig, once per
// test process.
var kubeconfig = sync.OnceValues(func() (*rest.Config, error) {
	path := os.Getenv(KubeconfigEnv)
	if path == "" {
		path = DefaultKubeconfig
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	if err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return nil, err
	}
	return rc, nil
})

// RequireKubernetes returns the REST config of the test cluster for tests
// of the Kubernetes tier. They run only with SANDGATE_K8S=1 (make
// test-k8s, which starts the local cluster as root) and skip otherwise;
// once asked for, a cluster that is missing or does not answer fails t,
// so a run that was meant to test Kubernetes can never pass by skipping.
// In -short mode it always skips.
func RequireKubernetes(t testing.TB) *rest.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Kubernetes cluster; skipped in -short mode")
	}
	if os.Getenv(KubernetesEnv) != "1" {
		t.Skip("Kubernetes tier: run make test-k8s")
	}
	rc, err := kubeconfig()
	if err != nil {
		t.Fatalf("Kubernetes cluster unreachable (make k8s-up starts the local one; %s names another kubeconfig): %v [%s=1 is set, so this fails instead of skipping]",
			KubeconfigEnv, err, KubernetesEnv)
	}
	return rest.CopyConfig(rc)
}
