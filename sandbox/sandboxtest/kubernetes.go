package sandboxtest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// KubeNamespace makes a fresh namespace of the test cluster, named
// prefix-<random>, that enforces the "restricted" Pod Security Standard,
// so every sandbox pod made in it must pass that standard. t.Cleanup
// deletes it and everything in it, whatever state the test left.
func KubeNamespace(t testing.TB, rc *rest.Config, prefix string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: prefix + "-" + randomHex(4),
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
