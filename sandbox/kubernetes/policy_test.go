package kubernetes_test

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestNetworkPolicy pins the isolation of sandbox pods: they accept only
// the gateway's pods, only on the runner's port, and send nothing.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	own := baseConfig()
	own.Instance = "ci"
	other := baseConfig()
	other.GatewaySelector = map[string]string{"app": "gw"}
	other.GatewayNamespace = "sandgate"
	tests := []struct {
		name        string
		cfg         kubernetes.Config
		instance    string
		gateway     map[string]string
		gatewayNSes string
	}{
		{"same namespace", own, "ci", kubernetes.DefaultGatewaySelector, ""},
		{"gateway elsewhere", other, "default", map[string]string{"app": "gw"}, "sandgate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			np := kubernetes.NetworkPolicy(tt.cfg)
			scope := map[string]string{kubernetes.LabelManaged: "true", kubernetes.LabelInstance: tt.instance}
			if np.Name != "sandgate-sandboxes-"+tt.instance || np.Namespace != "sandboxes" {
				t.Errorf("policy %s/%s", np.Namespace, np.Name)
			}
			s := np.Spec
			if !maps.Equal(s.PodSelector.MatchLabels, scope) || len(s.PodSelector.MatchExpressions) != 0 {
				t.Errorf("pod selector %+v, want exactly %v: every sandbox of the instance", s.PodSelector, scope)
			}
			if !slices.Equal(s.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
				t.Errorf("policy types %v, want Ingress and Egress", s.PolicyTypes)
			}
			if len(s.Egress) != 0 {
				t.Errorf("egress rules %+v, want none (deny all)", s.Egress)
			}
			if len(s.Ingress) != 1 || len(s.Ingress[0].From) != 1 || len(s.Ingress[0].Ports) != 1 {
				t.Fatalf("ingress %+v, want one rule: one peer, one port", s.Ingress)
			}
			peer, port := s.Ingress[0].From[0], s.Ingress[0].Ports[0]
			if peer.IPBlock != nil || peer.PodSelector == nil || !maps.Equal(peer.PodSelector.MatchLabels, tt.gateway) ||
				len(peer.PodSelector.MatchExpressions) != 0 {
				t.Errorf("peer %+v, want the gateway pods %v", peer, tt.gateway)
			}
			switch ns := peer.NamespaceSelector; {
			case tt.gatewayNSes == "" && ns != nil:
				t.Errorf("namespace selector %+v, want none (the policy's namespace)", ns)
			case tt.gatewayNSes != "" && (ns == nil || !maps.Equal(ns.MatchLabels, map[string]string{"kubernetes.io/metadata.name": tt.gatewayNSes})):
				t.Errorf("namespace selector %+v, want namespace %s", ns, tt.gatewayNSes)
			}
			if port.Protocol == nil || *port.Protocol != corev1.ProtocolTCP || port.Port == nil || port.Port.IntValue() != 7070 || port.EndPort != nil {
				t.Errorf("port %+v, want 7070/TCP only", port)
			}
		})
	}
}
