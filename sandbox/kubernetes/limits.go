package kubernetes

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
)

// resources are the requests and limits of each container. Limits come
// from the sandbox's Limits; requests from the Config, small, since an
// idle sandbox costs little. The pids limit is not here: Kubernetes has
// none per pod (it is the kubelet's podPidsLimit, one value per node).
func resources(cfg Config, lim sandbox.Limits) corev1.ResourceRequirements {
	ephemeral := int64(ephemeralOverheadBytes)
	if !cfg.durable() {
		ephemeral += lim.WorkspaceBytes
	}
	cpu := resource.NewMilliQuantity(int64(math.Ceil(lim.CPUs*1000)), resource.DecimalSI)
	mem := resource.NewQuantity(lim.MemoryBytes, resource.BinarySI)
	return corev1.ResourceRequirements{
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:              *cpu,
			corev1.ResourceMemory:           *mem,
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephemeral, resource.BinarySI),
		},
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:              atMost(cfg.CPURequest, *cpu),
			corev1.ResourceMemory:           atMost(cfg.MemoryRequest, *mem),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephemeralRequestBytes, resource.BinarySI),
		},
	}
}

// volumes are the only writable places besides nothing: the image is
// read-only. /workspace is the sandbox's PersistentVolumeClaim
// (WorkspaceClaim), or with WorkspaceEmptyDir an emptyDir on the node's
// disk, whose size limit is enforced by eviction, not ENOSPC. /tmp and
// /dev/shm are tmpfs (memory medium): their size limit is the tmpfs size,
// so a full /tmp is ENOSPC, and their pages count against the memory
// limit, as with Docker (Limits.CheckMemory).
func volumes(spec sandbox.Spec, cfg Config, lim sandbox.Limits) []corev1.Volume {
	size := func(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.BinarySI) }
	workspace := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: size(lim.WorkspaceBytes)}}
	if cfg.durable() {
		workspace = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectName(spec.ID)}}
	}
	return []corev1.Volume{
		{Name: "runner", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: size(runnerDirBytes)}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  objectName(spec.ID),
			Items:       []corev1.KeyToPath{{Key: SecretKey, Path: SecretKey}},
			DefaultMode: ptr[int32](0o440), // the sandbox's group (FSGroup) reads it
			Optional:    ptr(false),
		}}},
		{Name: "workspace", VolumeSource: workspace},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: size(lim.TmpBytes)}}},
		{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: size(sandbox.ShmBytes)}}},
	}
}

// deadline is the pod's activeDeadlineSeconds: the time from its creation
// to the sandbox's expiry, as the annotations say, rounded up, at least 1.
func deadline(m metav1.ObjectMeta) int64 {
	created := parseTime(m.Annotations[AnnotationCreatedAt])
	expires := parseTime(m.Annotations[AnnotationExpiresAt])
	return max(1, int64(math.Ceil(expires.Sub(created).Seconds())))
}

// atMost returns q, or limit when q is larger.
func atMost(q, limit resource.Quantity) resource.Quantity {
	if q.Cmp(limit) > 0 {
		return limit.DeepCopy()
	}
	return q.DeepCopy()
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
