package kubernetes_test

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestPolicyEnsured: New puts the instance's NetworkPolicy back as it
// must be, whatever was changed in it, and a second New (another
// replica) leaves it alone; a namespace that does not exist is named.
func TestPolicyEnsured(t *testing.T) {
	env := newEnv(t, "runc")
	api := env.cs.NetworkingV1().NetworkPolicies(env.cfg.Namespace)
	name := kubernetes.PolicyName(env.cfg)
	np, err := api.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("New made no policy %s: %v", name, err)
	}
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} // allow all egress
	np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
	if np, err = api.Update(t.Context(), np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := kubernetes.New(t.Context(), env.cfg); err != nil {
			t.Fatalf("New: %v", err)
		}
		got, err := api.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := kubernetes.NetworkPolicy(env.cfg).Spec; !equality.Semantic.DeepEqual(got.Spec, want) {
			t.Fatalf("policy after New = %+v, want %+v", got.Spec, want)
		}
	}
	cfg := env.cfg
	cfg.Namespace = "sgtest-missing-" + randomHex(4)
	if _, err := kubernetes.New(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), cfg.Namespace) {
		t.Errorf("New in a missing namespace: err = %v, want it named", err)
	} else {
		t.Logf("New in a missing namespace: %v", err)
	}
}
