package kubernetes

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
)

// Paths and the port inside a sandbox pod. The runner is started as
// RunnerPath --listen :RunnerPort --secret-file SecretPath --workspace
// WorkspaceDir.
const (
	// RunnerDir is the emptyDir the init container installs the runner
	// into; the sandbox container mounts it read-only.
	RunnerDir = "/sandgate/bin"
	// RunnerPath is the runner binary in RunnerDir.
	RunnerPath = RunnerDir + "/runner"
	// SecretDir is where the pod's Secret is mounted, read-only.
	SecretDir = "/run/sandgate/secret"
	// SecretKey is the key of the runner secret (hex) in the Secret, and
	// its file name in SecretDir.
	SecretKey = "runner"
	// SecretPath is the runner secret as the runner reads it.
	SecretPath = SecretDir + "/" + SecretKey
	// WorkspaceDir is the sandbox user's home and working directory.
	WorkspaceDir = "/workspace"
	// RunnerPort is the TCP port the runner serves on the pod's IP.
	RunnerPort = 7070
	// ContainerName is the sandbox's (the runner's) container.
	ContainerName = "sandbox"
	// InitContainerName is the init container that installs the runner.
	InitContainerName = "install-runner"
)

// Fixed sizes and times of every sandbox pod.
const (
	// terminationGraceSeconds is how long a deleted pod's runner has
	// between SIGTERM and SIGKILL. The runner exits at once on SIGTERM,
	// and Remove and Recreate wait for the pod to be gone.
	terminationGraceSeconds = 2
	// runnerDirBytes caps the runner's emptyDir (the binary is ~20 MiB).
	runnerDirBytes = 64 << 20
	// ephemeralOverheadBytes is ephemeral storage beyond the workspace:
	// the runner's emptyDir and the container logs the kubelet keeps.
	ephemeralOverheadBytes = 128 << 20
	// ephemeralRequestBytes is the ephemeral-storage request. Without it
	// the request would default to the limit, and the scheduler would
	// reserve every sandbox's whole workspace on the node's disk.
	ephemeralRequestBytes = 64 << 20
)

// env is the whole environment the runner starts with, as for Docker.
// Nothing comes from the gateway's environment; the image's ENV is merged
// under it by the runtime, which is the image's business.
var env = []corev1.EnvVar{
	{Name: "HOME", Value: WorkspaceDir},
	{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"},
	{Name: "LANG", Value: "C.UTF-8"},
	{Name: "TMPDIR", Value: "/tmp"},
}

// RunnerSecret returns the runner secret of sandbox id: an HMAC-SHA256 of
// the id under key, so every gateway replica that holds the key can dial
// the runner without reading the Secret back, and each sandbox's secret
// differs (a pod IP reused by another sandbox never accepts the old
// sandbox's secret). The constant prefix keeps these MACs apart from
// anything else the key may sign.
func RunnerSecret(key []byte, id string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sandgate runner secret v1\x00"))
	m.Write([]byte(id))
	return m.Sum(nil)
}

// normalize fills the image and the expiry of spec, as Create stores them.
func normalize(spec sandbox.Spec, cfg Config, now time.Time) sandbox.Spec {
	if spec.Image == "" {
		spec.Image = cfg.Image
	}
	if spec.ExpiresAt.IsZero() {
		spec.ExpiresAt = now.Add(spec.Limits.WithDefaults().MaxLifetime)
	}
	return spec
}

// Secret returns the Secret of sandbox spec.ID made at now: the runner
// secret in hex under SecretKey, and the labels and annotations that
// describe the sandbox. It is the sandbox's record: it outlives its pods
// (Recreate makes a new pod for it) and is deleted only by Remove. It is
// immutable, so kubelets need not watch it. Zero fields of cfg get their
// defaults; the function is pure.
func Secret(spec sandbox.Spec, cfg Config, now time.Time) *corev1.Secret {
	cfg = cfg.withDefaults()
	spec = normalize(spec, cfg, now)
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta(spec, cfg, now),
		Immutable:  ptr(true),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{SecretKey: []byte(hex.EncodeToString(RunnerSecret(cfg.Key, spec.ID)))},
	}
}

// Pod returns the pod of sandbox spec.ID, owned by its Secret owner (as
// made by Secret and created, so that it has a UID) and carrying the same
// labels and annotations. Every security-relevant field is set on
// purpose, including those whose zero value is already safe, so the
// policy reads in one place. Zero limits in spec and zero fields in cfg
// get their defaults: a zero never means unlimited or root, and an
// invalid User becomes DefaultUser. The function is pure.
func Pod(spec sandbox.Spec, cfg Config, owner *corev1.Secret) *corev1.Pod {
	cfg = cfg.withDefaults()
	lim := spec.Limits.WithDefaults()
	if spec.Image == "" {
		spec.Image = cfg.Image
	}
	if _, _, err := parseUser(cfg.User); err != nil {
		cfg.User = DefaultUser // New refuses such a Config
	}
	uid, gid, _ := parseUser(cfg.User)
	om := ownedBy(owner)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: om,
		Spec:       podSpec(spec, cfg, lim, uid, gid, deadline(om)),
	}
}

// ownedBy is the metadata of an object of the sandbox whose Secret is
// owner (its pod, its workspace claim): the Secret's name, namespace,
// labels and annotations, and the Secret as owner. Deleting the Secret
// (Remove, or an operator's kubectl delete secret) takes them with it,
// while a pod deleted or evicted alone leaves the Secret for Recreate.
func ownedBy(owner *corev1.Secret) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        owner.Name,
		Namespace:   owner.Namespace,
		Labels:      maps.Clone(owner.Labels),
		Annotations: maps.Clone(owner.Annotations),
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Secret", Name: owner.Name, UID: owner.UID,
		}},
	}
}

// WorkspaceClaim returns the PersistentVolumeClaim of sandbox spec.ID's
// /workspace, owned by its Secret owner as the pod is, with the same
// labels and annotations: deleting the Secret takes the workspace too,
// while pods come and go on it. Its size is the workspace limit, which
// the StorageClass enforces (Config.WorkspaceClass); ReadWriteOncePod,
// so that a pod replaced while the old one still terminates waits for
// it rather than share the file system. The function is pure.
func WorkspaceClaim(spec sandbox.Spec, cfg Config, owner *corev1.Secret) *corev1.PersistentVolumeClaim {
	cfg = cfg.withDefaults()
	lim := spec.Limits.WithDefaults()
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: ownedBy(owner),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			VolumeMode:  ptr(corev1.PersistentVolumeFilesystem),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: *resource.NewQuantity(lim.WorkspaceBytes, resource.BinarySI),
			}},
		},
	}
	if cfg.WorkspaceClass != "" {
		pvc.Spec.StorageClassName = ptr(cfg.WorkspaceClass)
	}
	return pvc
}

// podSpec is the hardened spec of a sandbox pod.
func podSpec(spec sandbox.Spec, cfg Config, lim sandbox.Limits, uid, gid int64, deadline int64) corev1.PodSpec {
	res := resources(cfg, lim)
	ps := corev1.PodSpec{
		Hostname: "sandbox", // never the pod's name, which holds the id
		// Namespaces: all private. A user namespace (hostUsers: false)
		// is not asked for: it needs idmapped mounts from the runtime
		// (runc 1.2 or later; the local cluster has Debian's 1.1.5), and
		// the sandbox user is unprivileged and capability-less anyway.
		HostNetwork:           false,
		HostPID:               false,
		HostIPC:               false,
		ShareProcessNamespace: ptr(false), // the runner is its container's pid 1 and reaps orphans
		// No identity: no service-account token, no Service environment
		// variables (which would name the cluster's services).
		AutomountServiceAccountToken: ptr(false),
		EnableServiceLinks:           ptr(false),
		// No DNS: sandboxes reach nothing by network (the NetworkPolicy
		// denies all egress; their egress is the runner's proxy to the
		// gateway, which resolves names). A resolver on the pod's own
		// loopback, where nothing listens, makes lookups fail at once
		// instead of timing out, and never names the cluster's DNS.
		DNSPolicy: corev1.DNSNone,
		DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"127.0.0.1"}},
		// A dead runner is a dead sandbox: nothing restarts it behind the
		// gateway's back; the gateway replaces it with Recreate.
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr[int64](terminationGraceSeconds),
		// The hard stop at the sandbox's expiry, should every gateway be
		// gone: the kubelet kills the pod (phase Failed, DeadlineExceeded).
		ActiveDeadlineSeconds: ptr(deadline),
		SecurityContext:       podSecurity(uid, gid),
		InitContainers:        []corev1.Container{installContainer(cfg, res, uid, gid)},
		Containers:            []corev1.Container{sandboxContainer(spec, cfg, res, uid, gid)},
		Volumes:               volumes(spec, cfg, lim),
	}
	if cfg.RuntimeClass != "" {
		ps.RuntimeClassName = ptr(cfg.RuntimeClass)
	}
	return ps
}

// installContainer is the init container that copies the runner from the
// runner image into the pod's runner emptyDir.
func installContainer(cfg Config, res corev1.ResourceRequirements, uid, gid int64) corev1.Container {
	return corev1.Container{
		Name:    InitContainerName,
		Image:   cfg.RunnerImage,
		Command: []string{"/runner", "install", RunnerPath},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "runner", MountPath: RunnerDir, ReadOnly: false},
		},
		Resources:                res,
		SecurityContext:          containerSecurity(uid, gid),
		ImagePullPolicy:          cfg.ImagePullPolicy,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// runnerCommand is the sandbox container's command: the injected runner
// on the pod's port, behind the sandbox's secret and, where there is a
// probe address, only once the NetworkPolicy blocks it (the runner's
// --await-blocked: a new pod can reach what its policy forbids until the
// network plugin has programmed it).
func runnerCommand(spec sandbox.Spec, cfg Config) []string {
	// A pod spec has no rlimits; the runner sets Docker's ulimits on
	// itself, and so on everything the sandbox runs.
	lim := spec.Limits.WithDefaults()
	rlimits := fmt.Sprintf("nofile=%d,fsize=%d,core=0", lim.NoFile, lim.FileSizeBytes)
	cmd := []string{RunnerPath, "--listen", ":" + strconv.Itoa(RunnerPort),
		"--secret-file", SecretPath, "--workspace", WorkspaceDir, "--rlimits", rlimits}
	if cfg.IsolationProbe != "" {
		cmd = append(cmd, "--await-blocked", cfg.IsolationProbe)
	}
	return cmd
}

// sandboxContainer is the sandbox itself: spec's image, running the
// injected runner.
func sandboxContainer(spec sandbox.Spec, cfg Config, res corev1.ResourceRequirements, uid, gid int64) corev1.Container {
	return corev1.Container{
		Name:  ContainerName,
		Image: spec.Image,
		// The runner is the entrypoint whatever the image says; with a
		// Command and no Args the image's CMD is not appended either.
		Command:    runnerCommand(spec, cfg),
		Args:       nil,
		WorkingDir: WorkspaceDir,
		Env:        append(slices.Clone(env), corev1.EnvVar{Name: "GOMAXPROCS", Value: spec.Limits.RunnerGOMAXPROCS()}),
		Ports: []corev1.ContainerPort{
			{Name: "runner", ContainerPort: RunnerPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "runner", MountPath: RunnerDir, ReadOnly: true},
			{Name: "secret", MountPath: SecretDir, ReadOnly: true},
			{Name: "workspace", MountPath: WorkspaceDir, ReadOnly: false},
			{Name: "tmp", MountPath: "/tmp", ReadOnly: false},
			{Name: "shm", MountPath: "/dev/shm", ReadOnly: false},
		},
		Resources:       res,
		SecurityContext: containerSecurity(uid, gid),
		ImagePullPolicy: cfg.ImagePullPolicy,
		// No probes: the gateway dials the runner itself, and a probe
		// without the secret would only be refused.
		LivenessProbe: nil, ReadinessProbe: nil, StartupProbe: nil,
		// A runner that dies at start leaves its last output here for
		// Create's error.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Stdin:                    false, TTY: false,
	}
}
