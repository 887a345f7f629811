package kubernetes

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// PolicyName is the name of the NetworkPolicy of cfg's instance.
func PolicyName(cfg Config) string {
	return "sandgate-sandboxes-" + cfg.withDefaults().Instance
}

// NetworkPolicy returns the policy that isolates every sandbox pod of
// cfg's instance: ingress only from the gateway pods, and only to the
// runner's port; egress none at all, not even DNS (sandboxes reach the
// network only through the runner's connection to the gateway). Replies
// on connections the gateway opened are not egress: NetworkPolicy is
// stateful. The function is pure.
func NetworkPolicy(cfg Config) *networkingv1.NetworkPolicy {
	cfg = cfg.withDefaults()
	gateway := networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(cfg.GatewaySelector)},
	}
	if cfg.GatewayNamespace != "" && cfg.GatewayNamespace != cfg.Namespace {
		// Without a namespace selector a pod selector means the policy's
		// own namespace.
		gateway.NamespaceSelector = &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": cfg.GatewayNamespace},
		}
	}
	port := intstr.FromInt32(RunnerPort)
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      PolicyName(cfg),
			Namespace: cfg.Namespace,
			Labels:    scopeLabels(cfg),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: scopeLabels(cfg)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{gateway},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: &port}},
			}},
			Egress: nil, // deny all
		},
	}
}

// ensurePolicy creates the instance's NetworkPolicy or brings an existing
// one back to NetworkPolicy(cfg). Several gateways may do it at once: a
// lost create race or a conflicting update is retried on fresh state.
func (p *Provider) ensurePolicy(ctx context.Context) error {
	want := NetworkPolicy(p.cfg)
	api := p.cs.NetworkingV1().NetworkPolicies(p.cfg.Namespace)
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		have, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(have.Spec, want.Spec) && equality.Semantic.DeepEqual(have.Labels, want.Labels) {
			return nil
		}
		have.Spec, have.Labels = want.Spec, want.Labels
		_, err = api.Update(ctx, have, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("ensure network policy %s/%s: %w", p.cfg.Namespace, want.Name, apiErr(err))
	}
	return nil
}
