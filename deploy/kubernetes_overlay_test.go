package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// runOverlay is the layer the test puts over testdata/kubernetes-local:
// what changes from run to run. The gateways trust the test's issuer
// (its URL, its CA through SSL_CERT_FILE, a way out to its port) and
// name the resource the issuer makes tokens for.
const runOverlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s
configMapGenerator:
  - name: sandgate-gateway
    namespace: sandgate
    behavior: merge
    literals:
      - SANDGATE_ISSUER=%[2]s
      - SANDGATE_PUBLIC_URL=%[3]s
  - name: sandgate-issuer-ca
    namespace: sandgate
    files:
      - ca.crt
patches:
  - target: {kind: Deployment, name: sandgate-gateway}
    patch: |-
      - op: add
        path: /spec/template/spec/volumes/-
        value: {name: issuer-ca, configMap: {name: sandgate-issuer-ca}}
      - op: add
        path: /spec/template/spec/containers/0/volumeMounts/-
        value: {name: issuer-ca, mountPath: /etc/sandgate/issuer-ca, readOnly: true}
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: SSL_CERT_FILE, value: /etc/sandgate/issuer-ca/ca.crt}
  - target: {kind: NetworkPolicy, name: sandgate-gateway}
    patch: |-
      - op: add
        path: /spec/egress/-
        value:
          to: [{ipBlock: {cidr: %[4]s/32}}]
          ports: [{protocol: TCP, port: %[5]d}]
`

// writeRunOverlay writes runOverlay for iss into a temporary directory
// and returns it.
func writeRunOverlay(t *testing.T, iss *testIssuer) string {
	t.Helper()
	base, err := filepath.Abs(localOverlay)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(iss.url, "https://"), fmt.Sprintf(":%d", iss.port))
	dir := t.TempDir()
	// kustomize takes no absolute path for a base.
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf(runOverlay, rel, iss.url, publicURL, host, iss.port)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), iss.caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// relocate moves the rendered objects from deploy/kubernetes's
// namespaces into the test's (names maps old to new), in every field
// that names one, and returns them as a List for kubectl apply. The
// Namespaces and the RuntimeClass are left out: the test makes its own
// namespaces, and the cluster has the RuntimeClass.
func relocate(t *testing.T, rendered []byte, names map[string]string) []byte {
	t.Helper()
	var items []json.RawMessage
	for _, obj := range decodeAll(t, "kubectl kustomize", bytes.NewReader(rendered)) {
		switch o := obj.(type) {
		case *corev1.Namespace, *nodev1.RuntimeClass:
			continue
		case *rbacv1.RoleBinding:
			for i := range o.Subjects {
				o.Subjects[i].Namespace = rename(names, o.Subjects[i].Namespace)
			}
		case *networkingv1.NetworkPolicy:
			for _, r := range o.Spec.Egress {
				renamePeers(names, r.To)
			}
			for _, r := range o.Spec.Ingress {
				renamePeers(names, r.From)
			}
		case *corev1.ConfigMap:
			for k, v := range o.Data {
				o.Data[k] = rename(names, v)
			}
		}
		om := obj.(metav1.Object)
		om.SetNamespace(rename(names, om.GetNamespace()))
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, b)
	}
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	// "sandgate-sandboxes" is no other value; "sandgate" is (part-of).
	for _, left := range []string{`:"` + sandboxNamespace + `"`, `"namespace":"` + gatewayNamespace + `"`} {
		if bytes.Contains(list, []byte(left)) {
			t.Fatalf("relocate left %s in the manifests: a field that names a namespace is new; move it too", left)
		}
	}
	return list
}

// rename returns names[s] if s is an old namespace, else s.
func rename(names map[string]string, s string) string {
	if n, ok := names[s]; ok {
		return n
	}
	return s
}

// renamePeers moves the namespace selectors of peers.
func renamePeers(names map[string]string, peers []networkingv1.NetworkPolicyPeer) {
	for _, p := range peers {
		if p.NamespaceSelector != nil {
			key := "kubernetes.io/metadata.name"
			if ns, ok := p.NamespaceSelector.MatchLabels[key]; ok {
				p.NamespaceSelector.MatchLabels[key] = rename(names, ns)
			}
		}
	}
}

// waitGatewaysReady waits until both gateway pods are Ready and returns
// them; on a timeout it reports what the pods and their logs say.
func waitGatewaysReady(t *testing.T, cs *clientset.Clientset, ns string) []corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + gatewayName}
	for {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), sel)
		if err != nil {
			t.Fatal(err)
		}
		var ready []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(p) {
				ready = append(ready, p)
			}
		}
		if len(ready) == 2 {
			return ready
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 gateway pods Ready after %s:\n%s", len(ready), readyTimeout, describe(t, cs, ns, pods.Items))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describe says what a failed wait needs: each pod's state and last log
// lines, and the namespace's events (a pod the ReplicaSet could not
// create shows only there).
func describe(t *testing.T, cs *clientset.Clientset, ns string, pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "pod %s: %s %+v\n", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
		tail := int64(20)
		logs, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(t.Context())
		fmt.Fprintf(&b, "  logs (%v):\n%s\n", err, logs)
	}
	if evs, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "event %s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}
