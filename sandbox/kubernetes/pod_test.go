package kubernetes_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// baseConfig is the smallest valid Config.
func baseConfig() kubernetes.Config {
	return kubernetes.Config{RESTConfig: &rest.Config{}, Namespace: "sandboxes", Key: testKey}
}

// TestPodPolicy checks the hardening every sandbox pod must have, for
// default and custom limits and configs.
func TestPodPolicy(t *testing.T) {
	t.Parallel()
	custom := sandbox.Limits{CPUs: 0.5, MemoryBytes: 1 << 30, Pids: 64, WorkspaceBytes: 100 << 20,
		TmpBytes: 10 << 20, NoFile: 256, FileSizeBytes: 50 << 20, MaxLifetime: time.Hour}
	gvisor := baseConfig()
	gvisor.RuntimeClass, gvisor.User, gvisor.Instance = "gvisor", "2000:3000", "ci"
	gvisor.ImagePullPolicy = corev1.PullNever
	gvisor.CPURequest, gvisor.MemoryRequest = resource.MustParse("100m"), resource.MustParse("128Mi")
	big := baseConfig()
	big.CPURequest, big.MemoryRequest = resource.MustParse("4"), resource.MustParse("8Gi")
	root := baseConfig()
	root.User = "0:0"
	ephemeral := baseConfig()
	ephemeral.WorkspaceClass = kubernetes.WorkspaceEmptyDir
	long := sandbox.Spec{ID: strings.Repeat("a", 64), Owner: strings.Repeat("o/:", 40), Session: strings.Repeat("s", 200)}
	tests := []struct {
		name            string
		spec            sandbox.Spec
		cfg             kubernetes.Config
		limits          sandbox.Limits
		user            string
		cpuReq, memReq  string
		runtime, image  string
		pull            corev1.PullPolicy
		deadlineSeconds int64
	}{
		{"defaults", sandbox.Spec{ID: "abc123"}, baseConfig(), sandbox.DefaultLimits.WithDefaults(), "1000:1000",
			"25m", "64Mi", "", kubernetes.DefaultImage, corev1.PullIfNotPresent, 4 * 3600},
		{"gvisor custom", sandbox.Spec{ID: "abc123", Image: "img:1", Limits: custom, Owner: "o", Session: "s",
			ExpiresAt: time.Now().Add(90 * time.Minute)}, gvisor, custom.WithDefaults(), "2000:3000",
			"100m", "128Mi", "gvisor", "img:1", corev1.PullNever, 90 * 60},
		{"requests above limits", sandbox.Spec{ID: "abc123", Limits: custom}, big, custom.WithDefaults(), "1000:1000",
			"500m", "1Gi", "", kubernetes.DefaultImage, corev1.PullIfNotPresent, 3600},
		{"root user replaced", sandbox.Spec{ID: "abc123"}, root, sandbox.DefaultLimits.WithDefaults(), "1000:1000",
			"25m", "64Mi", "", kubernetes.DefaultImage, corev1.PullIfNotPresent, 4 * 3600},
		{"long id, owner and session", long, baseConfig(), sandbox.DefaultLimits.WithDefaults(), "1000:1000",
			"25m", "64Mi", "", kubernetes.DefaultImage, corev1.PullIfNotPresent, 4 * 3600},
		{"workspace in an emptyDir", sandbox.Spec{ID: "abc123", Limits: custom}, ephemeral, custom.WithDefaults(), "1000:1000",
			"25m", "64Mi", "", kubernetes.DefaultImage, corev1.PullIfNotPresent, 3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret := kubernetes.Secret(tt.spec, tt.cfg, time.Now())
			secret.UID = "secret-uid"
			pod := kubernetes.Pod(tt.spec, tt.cfg, secret)
			checkPodLevel(t, pod, tt.user, tt.runtime, tt.deadlineSeconds)
			checkContainers(t, pod, tt.user, tt.image, tt.pull, tt.limits)
			durable := tt.cfg.WorkspaceClass != kubernetes.WorkspaceEmptyDir
			checkResources(t, pod, tt.limits, durable, tt.cpuReq, tt.memReq)
			checkVolumes(t, pod, tt.spec.ID, tt.limits, durable)
			checkMeta(t, pod, secret, tt.spec, tt.cfg)
		})
	}
}

func checkPodLevel(t *testing.T, pod *corev1.Pod, user, runtime string, deadline int64) {
	t.Helper()
	s := pod.Spec
	if s.HostNetwork || s.HostPID || s.HostIPC || s.ShareProcessNamespace == nil || *s.ShareProcessNamespace {
		t.Errorf("host or shared namespaces: net %v pid %v ipc %v share %v", s.HostNetwork, s.HostPID, s.HostIPC, s.ShareProcessNamespace)
	}
	if s.HostUsers != nil && !*s.HostUsers {
		t.Errorf("HostUsers = false: needs idmapped mounts the test cluster's runc lacks; change on purpose")
	}
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Error("the service-account token is mounted")
	}
	if s.EnableServiceLinks == nil || *s.EnableServiceLinks {
		t.Error("service links are enabled")
	}
	if s.ServiceAccountName != "" || s.NodeName != "" || s.PriorityClassName != "" || len(s.NodeSelector) != 0 ||
		len(s.Tolerations) != 0 || len(s.HostAliases) != 0 || len(s.EphemeralContainers) != 0 || len(s.ImagePullSecrets) != 0 {
		t.Errorf("unexpected scheduling or identity fields: %+v", s)
	}
	if s.DNSPolicy != corev1.DNSNone || s.DNSConfig == nil || !slices.Equal(s.DNSConfig.Nameservers, []string{"127.0.0.1"}) ||
		len(s.DNSConfig.Searches) != 0 {
		t.Errorf("DNS = %s %+v, want None with only a loopback nameserver", s.DNSPolicy, s.DNSConfig)
	}
	if s.Hostname != "sandbox" || s.Subdomain != "" || s.SetHostnameAsFQDN != nil {
		t.Errorf("hostname %q subdomain %q, want sandbox and none", s.Hostname, s.Subdomain)
	}
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("RestartPolicy = %s, want Never", s.RestartPolicy)
	}
	if g := s.TerminationGracePeriodSeconds; g == nil || *g < 1 || *g > 5 {
		t.Errorf("TerminationGracePeriodSeconds = %v, want a few seconds", g)
	}
	if d := s.ActiveDeadlineSeconds; d == nil || *d < deadline-2 || *d > deadline+2 {
		t.Errorf("ActiveDeadlineSeconds = %v, want %d", d, deadline)
	}
	if runtime == "" && s.RuntimeClassName != nil || runtime != "" && (s.RuntimeClassName == nil || *s.RuntimeClassName != runtime) {
		t.Errorf("RuntimeClassName = %v, want %q", s.RuntimeClassName, runtime)
	}
	uid, gid, _ := strings.Cut(user, ":")
	sc := s.SecurityContext
	if sc == nil {
		t.Fatal("no pod security context")
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || str(sc.RunAsUser) != uid || str(sc.RunAsGroup) != gid || str(sc.FSGroup) != gid {
		t.Errorf("pod user: non-root %v uid %s gid %s fsGroup %s, want %s", sc.RunAsNonRoot, str(sc.RunAsUser), str(sc.RunAsGroup), str(sc.FSGroup), user)
	}
	if len(sc.SupplementalGroups) != 0 || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
		t.Errorf("supplemental groups %v policy %v, want none and Strict", sc.SupplementalGroups, sc.SupplementalGroupsPolicy)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccomp = %+v, want RuntimeDefault", sc.SeccompProfile)
	}
	if len(sc.Sysctls) != 0 || sc.SELinuxOptions != nil || sc.WindowsOptions != nil ||
		sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
		t.Errorf("pod security context weakened: %+v", sc)
	}
}

func checkContainers(t *testing.T, pod *corev1.Pod, user, image string, pull corev1.PullPolicy, limits sandbox.Limits) {
	t.Helper()
	if len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d init containers and %d containers, want 1 and 1", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
	}
	init, main := pod.Spec.InitContainers[0], pod.Spec.Containers[0]
	wantInit := []string{"/runner", "install", "/sandgate/bin/runner"}
	if init.Name != kubernetes.InitContainerName || init.Image != kubernetes.DefaultRunnerImage || !slices.Equal(init.Command, wantInit) || len(init.Args) != 0 {
		t.Errorf("init container %s %s %v %v, want the runner image running %v", init.Name, init.Image, init.Command, init.Args, wantInit)
	}
	wantCmd := []string{"/sandgate/bin/runner", "--listen", ":7070", "--secret-file", "/run/sandgate/secret/runner", "--workspace", "/workspace",
		// Docker's ulimits, which a pod spec cannot say: nofile and fsize
		// from the limits, no core dumps.
		"--rlimits", fmt.Sprintf("nofile=%d,fsize=%d,core=0", limits.NoFile, limits.FileSizeBytes)}
	if main.Name != kubernetes.ContainerName || main.Image != image || !slices.Equal(main.Command, wantCmd) || main.Args != nil {
		t.Errorf("container %s %s %v %v, want %s running %v and no args", main.Name, main.Image, main.Command, main.Args, image, wantCmd)
	}
	if main.WorkingDir != "/workspace" {
		t.Errorf("WorkingDir = %q, want /workspace", main.WorkingDir)
	}
	wantEnv := []corev1.EnvVar{{Name: "HOME", Value: "/workspace"}, {Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"},
		{Name: "LANG", Value: "C.UTF-8"}, {Name: "TMPDIR", Value: "/tmp"},
		{Name: "GOMAXPROCS", Value: strconv.Itoa(int(math.Ceil(limits.CPUs)))}}
	if !slices.Equal(main.Env, wantEnv) || len(main.EnvFrom) != 0 || len(init.Env) != 0 || len(init.EnvFrom) != 0 {
		t.Errorf("env %v envFrom %v (init %v %v), want exactly %v", main.Env, main.EnvFrom, init.Env, init.EnvFrom, wantEnv)
	}
	wantPorts := []corev1.ContainerPort{{Name: "runner", ContainerPort: 7070, Protocol: corev1.ProtocolTCP}}
	if !slices.Equal(main.Ports, wantPorts) || len(init.Ports) != 0 {
		t.Errorf("ports %+v, want only the runner's 7070/TCP and no host port", main.Ports)
	}
	for _, c := range []corev1.Container{init, main} {
		checkContainerSecurity(t, c, user)
		if c.ImagePullPolicy != pull {
			t.Errorf("%s: ImagePullPolicy = %s, want %s", c.Name, c.ImagePullPolicy, pull)
		}
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("%s: TerminationMessagePolicy = %s, want FallbackToLogsOnError", c.Name, c.TerminationMessagePolicy)
		}
		if c.Stdin || c.StdinOnce || c.TTY {
			t.Errorf("%s: stdin %v tty %v", c.Name, c.Stdin, c.TTY)
		}
		if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil || c.Lifecycle != nil || c.RestartPolicy != nil {
			t.Errorf("%s: probes, hooks or a restart policy are set", c.Name)
		}
	}
}

func checkContainerSecurity(t *testing.T, c corev1.Container, user string) {
	t.Helper()
	uid, gid, _ := strings.Cut(user, ":")
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("%s: no security context", c.Name)
	}
	if sc.Privileged == nil || *sc.Privileged {
		t.Errorf("%s: Privileged = %v", c.Name, sc.Privileged)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: AllowPrivilegeEscalation = %v, want false", c.Name, sc.AllowPrivilegeEscalation)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("%s: capabilities %+v, want drop ALL, add none", c.Name, sc.Capabilities)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: root file system is writable", c.Name)
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || str(sc.RunAsUser) != uid || str(sc.RunAsGroup) != gid {
		t.Errorf("%s: user non-root %v %s:%s, want %s", c.Name, sc.RunAsNonRoot, str(sc.RunAsUser), str(sc.RunAsGroup), user)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccomp %+v, want RuntimeDefault", c.Name, sc.SeccompProfile)
	}
	if sc.ProcMount == nil || *sc.ProcMount != corev1.DefaultProcMount || sc.SELinuxOptions != nil || sc.WindowsOptions != nil {
		t.Errorf("%s: procMount %v selinux %v", c.Name, sc.ProcMount, sc.SELinuxOptions)
	}
}

// checkResources: the ephemeral-storage limit covers the runner's
// emptyDir and logs, and the workspace only where it is an emptyDir too.
func checkResources(t *testing.T, pod *corev1.Pod, want sandbox.Limits, durable bool, cpuReq, memReq string) {
	t.Helper()
	workspace := want.WorkspaceBytes
	if durable {
		workspace = 0
	}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		l, r := c.Resources.Limits, c.Resources.Requests
		if got := l.Cpu().MilliValue(); got != int64(want.CPUs*1000) {
			t.Errorf("%s: cpu limit %dm, want %dm", c.Name, got, int64(want.CPUs*1000))
		}
		if got := l.Memory().Value(); got != want.MemoryBytes {
			t.Errorf("%s: memory limit %d, want %d", c.Name, got, want.MemoryBytes)
		}
		if got := l.StorageEphemeral().Value(); got < workspace+64<<20 || got > workspace+256<<20 {
			t.Errorf("%s: ephemeral-storage limit %d, want the emptyDir workspace (%d) and a little", c.Name, got, workspace)
		}
		if r.Cpu().Cmp(resource.MustParse(cpuReq)) != 0 || r.Memory().Cmp(resource.MustParse(memReq)) != 0 {
			t.Errorf("%s: requests cpu %v memory %v, want %s and %s", c.Name, r.Cpu(), r.Memory(), cpuReq, memReq)
		}
		// Unset, the request would default to the limit and reserve every
		// workspace's whole size on the node's disk.
		if es, ok := r[corev1.ResourceEphemeralStorage]; !ok || es.Value() <= 0 || es.Value() > 256<<20 {
			t.Errorf("%s: ephemeral-storage request %v, want a small explicit one", c.Name, es)
		}
		if len(l) != 3 || len(r) != 3 || len(c.Resources.Claims) != 0 {
			t.Errorf("%s: resources %+v, want cpu, memory and ephemeral-storage only", c.Name, c.Resources)
		}
	}
}

// checkVolumes: every volume is an emptyDir or the Secret, never a host
// path, but for a durable /workspace, which is the sandbox's own claim.
func checkVolumes(t *testing.T, pod *corev1.Pod, id string, want sandbox.Limits, durable bool) {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
		var sources map[string]any
		b, _ := json.Marshal(v.VolumeSource)
		_ = json.Unmarshal(b, &sources)
		claim := durable && v.Name == "workspace" && v.PersistentVolumeClaim != nil
		if len(sources) != 1 || (v.EmptyDir == nil && v.Secret == nil && !claim) {
			t.Errorf("volume %s has sources %v: want one emptyDir or secret (or the workspace claim), never a host path", v.Name, slices.Collect(maps.Keys(sources)))
		}
	}
	if c := vols["workspace"].PersistentVolumeClaim; durable && (c == nil || c.ClaimName != "sandgate-"+id || c.ReadOnly) {
		t.Errorf("workspace volume = %+v, want claim sandgate-%s, writable", vols["workspace"].VolumeSource, id)
	}
	emptyDir := func(name string, medium corev1.StorageMedium, size int64) {
		v, ok := vols[name]
		if !ok || v.EmptyDir == nil || v.EmptyDir.Medium != medium || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Value() != size {
			t.Errorf("volume %s = %+v, want an emptyDir (medium %q) of %d bytes", name, v.EmptyDir, medium, size)
		}
	}
	emptyDir("runner", corev1.StorageMediumDefault, 64<<20)
	if !durable {
		emptyDir("workspace", corev1.StorageMediumDefault, want.WorkspaceBytes)
	}
	emptyDir("tmp", corev1.StorageMediumMemory, want.TmpBytes)
	emptyDir("shm", corev1.StorageMediumMemory, sandbox.ShmBytes)
	s := vols["secret"].Secret
	if s == nil || s.SecretName != "sandgate-"+id || len(s.Items) != 1 || s.Items[0].Key != "runner" || s.Items[0].Path != "runner" ||
		s.DefaultMode == nil || *s.DefaultMode != 0o440 || s.Optional == nil || *s.Optional {
		t.Errorf("secret volume = %+v, want sandgate-%s's key runner, mode 0440, required", s, id)
	}
	if len(vols) != 5 {
		t.Errorf("%d volumes, want runner, secret, workspace, tmp, shm", len(vols))
	}
	wantMain := []corev1.VolumeMount{
		{Name: "runner", MountPath: "/sandgate/bin", ReadOnly: true},
		{Name: "secret", MountPath: "/run/sandgate/secret", ReadOnly: true},
		{Name: "workspace", MountPath: "/workspace"},
		{Name: "tmp", MountPath: "/tmp"},
		{Name: "shm", MountPath: "/dev/shm"},
	}
	if got := pod.Spec.Containers[0].VolumeMounts; !slices.EqualFunc(got, wantMain, sameMount) {
		t.Errorf("mounts = %+v, want %+v", got, wantMain)
	}
	wantInit := []corev1.VolumeMount{{Name: "runner", MountPath: "/sandgate/bin"}}
	if got := pod.Spec.InitContainers[0].VolumeMounts; !slices.EqualFunc(got, wantInit, sameMount) {
		t.Errorf("init mounts = %+v, want %+v", got, wantInit)
	}
}

// sameMount compares mounts, and refuses propagation and sub-paths.
func sameMount(a, b corev1.VolumeMount) bool {
	return a.Name == b.Name && a.MountPath == b.MountPath && a.ReadOnly == b.ReadOnly && a.SubPath == "" && a.SubPathExpr == "" &&
		(a.MountPropagation == nil || *a.MountPropagation == corev1.MountPropagationNone) && a.RecursiveReadOnly == nil
}

func checkMeta(t *testing.T, pod *corev1.Pod, secret *corev1.Secret, spec sandbox.Spec, cfg kubernetes.Config) {
	t.Helper()
	name := "sandgate-" + spec.ID
	if pod.Name != name || secret.Name != name || pod.Namespace != cfg.Namespace || secret.Namespace != cfg.Namespace {
		t.Errorf("names %s/%s and %s/%s, want %s/%s", pod.Namespace, pod.Name, secret.Namespace, secret.Name, cfg.Namespace, name)
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		t.Errorf("name %s: %v", name, msgs)
	}
	refs := pod.OwnerReferences
	if len(refs) != 1 || refs[0].Kind != "Secret" || refs[0].APIVersion != "v1" || refs[0].Name != name || refs[0].UID != secret.UID {
		t.Errorf("owner references = %+v, want the Secret %s", refs, name)
	}
	if !maps.Equal(pod.Labels, secret.Labels) || !maps.Equal(pod.Annotations, secret.Annotations) {
		t.Errorf("pod and Secret metadata differ:\n%v %v\n%v %v", pod.Labels, pod.Annotations, secret.Labels, secret.Annotations)
	}
	instance := cfg.Instance
	if instance == "" {
		instance = kubernetes.DefaultInstance
	}
	if pod.Labels[kubernetes.LabelManaged] != "true" || pod.Labels[kubernetes.LabelInstance] != instance {
		t.Errorf("labels = %v, want managed and instance %s", pod.Labels, instance)
	}
	for k, v := range pod.Labels {
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			t.Errorf("label %s=%s: %v", k, v, msgs)
		}
	}
	a := pod.Annotations
	if a[kubernetes.AnnotationSandbox] != spec.ID || a[kubernetes.AnnotationOwner] != spec.Owner || a[kubernetes.AnnotationSession] != spec.Session {
		t.Errorf("annotations = %v, want id, owner and session of %+v", a, spec)
	}
	if _, err := time.Parse(time.RFC3339Nano, a[kubernetes.AnnotationExpiresAt]); err != nil {
		t.Errorf("expires-at %q: %v", a[kubernetes.AnnotationExpiresAt], err)
	}
	if secret.Immutable == nil || !*secret.Immutable || secret.Type != corev1.SecretTypeOpaque || len(secret.Data) != 1 {
		t.Errorf("secret immutable %v type %s keys %d, want an immutable Opaque secret of one key", secret.Immutable, secret.Type, len(secret.Data))
	}
	if got, want := string(secret.Data["runner"]), hex.EncodeToString(kubernetes.RunnerSecret(testKey, spec.ID)); got != want {
		t.Errorf("secret runner = %q, want the HMAC of the id %q", got, want)
	}
}

// TestRunnerSecret: secrets are per sandbox and per key, and fit the
// runner's preamble.
func TestRunnerSecret(t *testing.T) {
	t.Parallel()
	a, b := kubernetes.RunnerSecret(testKey, "a"), kubernetes.RunnerSecret(testKey, "b")
	other := kubernetes.RunnerSecret([]byte(strings.Repeat("k", 32)), "a")
	if len(a) != 32 || string(a) == string(b) || string(a) == string(other) {
		t.Errorf("secrets %x %x %x: want 32 bytes, distinct per id and key", a, b, other)
	}
	if string(a) != string(kubernetes.RunnerSecret(testKey, "a")) {
		t.Error("RunnerSecret is not deterministic: replicas could not share it")
	}
}

func str(p *int64) string {
	if p == nil {
		return "<nil>"
	}
	return strconv.FormatInt(*p, 10)
}

// TestWorkspaceClaim: a sandbox's workspace claim has its Secret as
// owner (so that deleting the record takes the files), its labels, the
// workspace size, ReadWriteOncePod, and the configured StorageClass, or
// none for the cluster's default.
func TestWorkspaceClaim(t *testing.T) {
	t.Parallel()
	lim := sandbox.Limits{WorkspaceBytes: 300 << 20}
	for _, class := range []string{"", "sandgate-workspace"} {
		cfg := baseConfig()
		cfg.WorkspaceClass = class
		spec := sandbox.Spec{ID: "abc123", Limits: lim, Owner: "o"}
		secret := kubernetes.Secret(spec, cfg, time.Now())
		secret.UID = "secret-uid"
		c := kubernetes.WorkspaceClaim(spec, cfg, secret)
		if c.Name != secret.Name || c.Namespace != secret.Namespace || !maps.Equal(c.Labels, secret.Labels) {
			t.Errorf("class %q: claim %s/%s labels %v, want the Secret's name, namespace and labels", class, c.Namespace, c.Name, c.Labels)
		}
		if o := c.OwnerReferences; len(o) != 1 || o[0].Kind != "Secret" || o[0].UID != "secret-uid" || o[0].Name != secret.Name {
			t.Errorf("class %q: owners %+v, want the Secret", class, o)
		}
		if got := c.Spec.Resources.Requests.Storage().Value(); got != 300<<20 {
			t.Errorf("class %q: requests %d bytes, want the workspace's %d", class, got, 300<<20)
		}
		if !slices.Equal(c.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}) {
			t.Errorf("class %q: access modes %v, want ReadWriteOncePod only", class, c.Spec.AccessModes)
		}
		if got := c.Spec.StorageClassName; class == "" && got != nil || class != "" && (got == nil || *got != class) {
			t.Errorf("class %q: storageClassName %v", class, got)
		}
	}
}
