package deploy_test

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// manifests holds deploy/kubernetes's objects by kind and the settings
// of its gateway.env.
type manifests struct {
	namespaces []*corev1.Namespace
	deployment *appsv1.Deployment
	service    *corev1.Service
	role       *rbacv1.Role
	binding    *rbacv1.RoleBinding
	policies   map[string]*networkingv1.NetworkPolicy
	runtime    *nodev1.RuntimeClass
	env        map[string]string
	all        []runtime.Object
}

// readManifests decodes, strictly, every resource deploy/kubernetes's
// kustomization lists, and checks that it lists every YAML file there.
func readManifests(t *testing.T) manifests {
	t.Helper()
	k := readKustomization(t, manifestsDir)
	files, _ := filepath.Glob(filepath.Join(manifestsDir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(k.Resources, base) {
			t.Errorf("%s is not in kustomization.yaml's resources", f)
		}
	}
	m := manifests{policies: map[string]*networkingv1.NetworkPolicy{}}
	for _, res := range k.Resources {
		f, err := os.Open(filepath.Join(manifestsDir, res))
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeAll(t, res, f)
		f.Close()
		m.all = append(m.all, objs...)
		for _, o := range objs {
			switch o := o.(type) {
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o)
			case *appsv1.Deployment:
				m.deployment = o
			case *corev1.Service:
				m.service = o
			case *rbacv1.Role:
				m.role = o
			case *rbacv1.RoleBinding:
				m.binding = o
			case *networkingv1.NetworkPolicy:
				m.policies[o.Name] = o
			case *nodev1.RuntimeClass:
				m.runtime = o
			}
		}
	}
	if len(k.ConfigMapGenerator) != 1 || len(k.ConfigMapGenerator[0].Envs) != 1 {
		t.Fatalf("kustomization.yaml: want one configMapGenerator from one env file, got %+v", k.ConfigMapGenerator)
	}
	m.env = readEnvFile(t, filepath.Join(manifestsDir, k.ConfigMapGenerator[0].Envs[0]))
	if m.deployment == nil || m.service == nil || m.role == nil || m.binding == nil || m.runtime == nil || len(m.namespaces) != 2 {
		t.Fatalf("deploy/kubernetes lacks a kind of object: %+v", m)
	}
	return m
}

// args returns a container's --flag=value arguments by flag.
func args(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, a := range c.Args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

// TestKubernetesManifests pins what deploy/kubernetes must keep: RBAC
// exactly as sandbox/kubernetes/doc.go lists it, in the sandboxes'
// namespace only; a hardened two-replica gateway whose flags, volumes,
// probes and labels fit together; and network policies that let the
// gateway reach the runners and nothing reach the sandboxes.
func TestKubernetesManifests(t *testing.T) {
	m := readManifests(t)
	for _, ns := range m.namespaces {
		if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("namespace %s does not enforce the restricted Pod Security Standard", ns.Name)
		}
	}
	for _, o := range m.all {
		om := o.(interface{ GetNamespace() string })
		_, clusterScoped := o.(*corev1.Namespace)
		if _, rc := o.(*nodev1.RuntimeClass); rc {
			clusterScoped = true
		}
		if ns := om.GetNamespace(); !clusterScoped && ns != gatewayNamespace && ns != sandboxNamespace {
			t.Errorf("%T in namespace %q, want %s or %s", o, ns, gatewayNamespace, sandboxNamespace)
		}
	}
	t.Run("rbac", func(t *testing.T) { checkRBAC(t, m) })
	t.Run("deployment", func(t *testing.T) { checkDeployment(t, m) })
	t.Run("network", func(t *testing.T) { checkNetwork(t, m) })
}

func checkRBAC(t *testing.T, m manifests) {
	// What the provider uses, from the provider itself, so the Role
	// cannot drift from the code.
	want := kubernetes.Permissions
	if !reflect.DeepEqual(m.role.Rules, want) {
		t.Errorf("role rules:\n got %+v\nwant %+v", m.role.Rules, want)
	}
	b := m.binding
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: m.deployment.Spec.Template.Spec.ServiceAccountName, Namespace: m.deployment.Namespace}
	checks := []struct {
		what string
		ok   bool
	}{
		{"the Role is in the sandboxes' namespace", m.role.Namespace == sandboxNamespace},
		{"the RoleBinding is beside it", b.Namespace == m.role.Namespace},
		{"it binds that Role", b.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: m.role.Name}},
		{"to the gateway's ServiceAccount alone", len(b.Subjects) == 1 && b.Subjects[0] == subject},
		{"which the sandbox namespace setting names", m.env["SANDGATE_K8S_NAMESPACE"] == m.role.Namespace},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("rbac: want %s", c.what)
		}
	}
}

func checkDeployment(t *testing.T, m manifests) {
	d := m.deployment
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("gateway pod has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	a := args(c)
	psc, sc := spec.SecurityContext, c.SecurityContext
	mounts := map[string]string{} // mount path -> volume
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	probes := []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe}
	checks := []struct {
		what string
		ok   bool
	}{
		{"2 replicas", d.Spec.Replicas != nil && *d.Spec.Replicas == 2},
		{"pod labels the sandboxes' policy admits", isSubset(kubernetes.DefaultGatewaySelector, d.Spec.Template.Labels)},
		{"a selector on them", maps.Equal(d.Spec.Selector.MatchLabels, kubernetes.DefaultGatewaySelector)},
		{"its own ServiceAccount, token mounted", spec.ServiceAccountName == gatewayName && spec.AutomountServiceAccountToken != nil && *spec.AutomountServiceAccountToken},
		{"more than the gateway's shutdown minute to stop", spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds > 60},
		{"non-root pod", psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot && psc.RunAsUser != nil && *psc.RunAsUser != 0},
		{"seccomp RuntimeDefault", psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"no privilege escalation", sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation},
		{"read-only root", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem},
		{"every capability dropped", sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0},
		{"CPU and memory requests and limits", !c.Resources.Requests.Cpu().IsZero() && !c.Resources.Requests.Memory().IsZero() && !c.Resources.Limits.Cpu().IsZero() && !c.Resources.Limits.Memory().IsZero()},
		{"--provider kubernetes on gVisor", a["provider"] == "kubernetes" && a["k8s-runtime-class"] == m.runtime.Name},
		{"the RuntimeClass runs runsc", m.runtime.Handler == "runsc"},
		{"--auth external (the issuer from gateway.env)", a["auth"] == "external" && strings.HasPrefix(m.env["SANDGATE_ISSUER"], "https://")},
		{"--addr on all addresses, port named http", a["addr"] == "0.0.0.0:8080" && ports["http"] == 8080},
		{"--var on an emptyDir", volumes[mounts[a["var"]]].EmptyDir != nil},
		{"--k8s-key-file in the runner-key Secret", volumes[mounts[filepath.Dir(a["k8s-key-file"])]].Secret != nil},
		{"settings from the generated ConfigMap", len(c.EnvFrom) == 1 && c.EnvFrom[0].ConfigMapRef != nil && c.EnvFrom[0].ConfigMapRef.Name == gatewayName},
		{"startup, readiness and liveness probes on /healthz", !slices.ContainsFunc(probes, func(p *corev1.Probe) bool {
			return p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "http"
		})},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("deployment: want %s", c.what)
		}
	}
	if s := m.service; !maps.Equal(s.Spec.Selector, kubernetes.DefaultGatewaySelector) || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("service: selector %v, ports %+v; want the gateway pods' http port", s.Spec.Selector, s.Spec.Ports)
	}
}

func checkNetwork(t *testing.T, m manifests) {
	gw, deny := m.policies[gatewayName], m.policies["sandgate-default-deny"]
	if gw == nil || deny == nil {
		t.Fatalf("network policies %v: want %s and sandgate-default-deny", slices.Collect(maps.Keys(m.policies)), gatewayName)
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	if deny.Namespace != sandboxNamespace || len(deny.Spec.PodSelector.MatchLabels)+len(deny.Spec.PodSelector.MatchExpressions) != 0 ||
		!slices.Equal(deny.Spec.PolicyTypes, both) || len(deny.Spec.Ingress)+len(deny.Spec.Egress) != 0 {
		t.Errorf("sandgate-default-deny: %+v; want every pod of %s denied all traffic", deny.Spec, sandboxNamespace)
	}
	if !maps.Equal(gw.Spec.PodSelector.MatchLabels, kubernetes.DefaultGatewaySelector) || !slices.Equal(gw.Spec.PolicyTypes, both) {
		t.Errorf("%s: selects %v for %v; want the gateway pods, ingress and egress", gw.Name, gw.Spec.PodSelector.MatchLabels, gw.Spec.PolicyTypes)
	}
	runners := false
	for _, r := range gw.Spec.Egress {
		for _, to := range r.To {
			runners = runners || to.NamespaceSelector != nil && to.PodSelector != nil &&
				maps.Equal(to.NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": sandboxNamespace}) &&
				maps.Equal(to.PodSelector.MatchLabels, map[string]string{kubernetes.LabelManaged: "true"}) &&
				len(r.Ports) == 1 && r.Ports[0].Port.IntValue() == kubernetes.RunnerPort
		}
	}
	if !runners {
		t.Errorf("%s: no egress rule to the sandbox pods' port %d in %s", gw.Name, kubernetes.RunnerPort, sandboxNamespace)
	}
	ingress := false
	for _, r := range gw.Spec.Ingress {
		for _, p := range r.Ports {
			ingress = ingress || p.Port.IntValue() == 8080
		}
	}
	if !ingress {
		t.Errorf("%s: no ingress rule for the MCP port 8080", gw.Name)
	}
}

// isSubset reports whether every label of sub is in set.
func isSubset(sub, set map[string]string) bool {
	for k, v := range sub {
		if set[k] != v {
			return false
		}
	}
	return true
}
