package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const (
	// workspaceClass is the local cluster's StorageClass for workspaces
	// (deploy/kubernetes/local/config/storage.yaml).
	workspaceClass = "sandgate-workspace"
	// workspaceVolumes is where its driver keeps the volumes on the host,
	// when the test runs on the cluster's host.
	workspaceVolumes = "/var/lib/sandgate-k8s/csi/volumes"
	// volumeUser owns the writer's processes: not root, as in a sandbox.
	volumeUser = 1000
)

// TestKubernetesWorkspaceVolume shows that a PersistentVolume of the
// workspace StorageClass enforces its size the way a sandbox's /workspace
// must: a 64 MiB claim, and a pod writing 100 MiB into it gets ENOSPC
// while the pod keeps running (no eviction, no restart) and what it wrote
// before stays; a new pod on the same claim finds the files (pause =
// delete the pod, keep the claim); deleting the claim removes the volume
// on the node. Under runc and gVisor, as sandboxes run under either.
func TestKubernetesWorkspaceVolume(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cs.StorageV1().StorageClasses().Get(t.Context(), workspaceClass, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("StorageClass %s (make k8s-up creates it): %v", workspaceClass, err)
	}
	kc := newKubectl(t)
	ns := freshNamespace(t, rc, cs, "sgvolume")
	for _, runtime := range []string{"runc", "gvisor"} {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			v := volumeTest{cs: cs, kc: kc, ns: ns, runtime: runtime, claim: "workspace-" + runtime}
			v.run(t, sc.Provisioner)
		})
	}
}

type volumeTest struct {
	cs          *clientset.Clientset
	kc          kubectl
	ns, runtime string
	claim       string
}

func (v volumeTest) run(t *testing.T, provisioner string) {
	v.createClaim(t)
	writer := v.startPod(t, v.claim+"-1")
	out, code := v.kc.exec(t, v.ns, writer, `echo kept > /workspace/marker || exit 100
		dd if=/dev/zero of=/workspace/fill bs=1M count=100; rc=$?
		df -k /workspace | tail -1; exit $rc`)
	t.Logf("write 100 MiB into 64 MiB: dd exit %d:\n%s", code, out)
	if code == 0 || code == 100 || !strings.Contains(out, "No space left on device") {
		t.Fatalf("writing 100 MiB into a 64 MiB volume: exit %d, want ENOSPC:\n%s", code, out)
	}
	// The kubelet's eviction manager looks every 10 s; a pod it evicted
	// for the write would be Failed by then.
	v.checkRunning(t, writer, 12*time.Second)
	size := v.fileSize(t, writer)
	if size < 32<<20 || size > 64<<20 {
		t.Errorf("the partly written file is %d bytes; want most of 64 MiB", size)
	}
	pv := v.checkVolume(t, provisioner)

	// Pause and resume: the pod goes, the claim and its files stay.
	v.deletePod(t, writer)
	reader := v.startPod(t, v.claim+"-2")
	if got := v.fileSize(t, reader); got != size {
		t.Errorf("after a new pod: fill is %d bytes, want %d", got, size)
	}
	if out, _ := v.kc.exec(t, v.ns, reader, "cat /workspace/marker"); out != "kept\n" {
		t.Errorf("after a new pod: marker = %q, want kept", out)
	}
	v.deletePod(t, reader)
	v.deleteClaim(t, pv)
}

func (v volumeTest) createClaim(t *testing.T) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: v.claim, Namespace: v.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			StorageClassName: ptrTo(workspaceClass),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("64Mi"),
			}},
		},
	}
	if _, err := v.cs.CoreV1().PersistentVolumeClaims(v.ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create claim: %v", err)
	}
}

// startPod starts a pod that mounts the claim at /workspace, as a
// sandbox's would, and waits until it runs.
func (v volumeTest) startPod(t *testing.T, name string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v.ns},
		Spec: corev1.PodSpec{
			RuntimeClassName:              ptrTo(v.runtime),
			TerminationGracePeriodSeconds: ptrTo[int64](0),
			AutomountServiceAccountToken:  ptrTo(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptrTo[int64](volumeUser), RunAsGroup: ptrTo[int64](volumeUser), RunAsNonRoot: ptrTo(true),
				FSGroup:             ptrTo[int64](volumeUser),
				FSGroupChangePolicy: ptrTo(corev1.FSGroupChangeOnRootMismatch),
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "box", Image: sandboxtest.LocalImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptrTo(false), ReadOnlyRootFilesystem: ptrTo(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}},
			}},
			Volumes: []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.claim},
			}}},
		},
	}
	start := time.Now()
	if _, err := v.cs.CoreV1().Pods(v.ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := v.cs.CoreV1().Pods(v.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			t.Logf("pod %s (%s) running in %.1f s", name, v.runtime, time.Since(start).Seconds())
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not running after 2 min: %v %+v\nevents: %s", name, err, p.Status, v.events(t))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkRunning checks, for a while, that the pod stays running with no
// restart and no eviction.
func (v volumeTest) checkRunning(t *testing.T, name string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; {
		p, err := v.cs.CoreV1().Pods(v.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.Reason != "" || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Fatalf("pod %s after filling its volume: phase %s, reason %q, restarts %d; want Running\nevents: %s",
				name, p.Status.Phase, p.Status.Reason, p.Status.ContainerStatuses[0].RestartCount, v.events(t))
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(time.Second)
	}
}

func (v volumeTest) fileSize(t *testing.T, pod string) int64 {
	t.Helper()
	out, code := v.kc.exec(t, v.ns, pod, "stat -c %s /workspace/fill")
	var n int64
	if _, err := fmt.Sscan(out, &n); err != nil || code != 0 {
		t.Fatalf("stat /workspace/fill in %s: exit %d: %s", pod, code, out)
	}
	return n
}

// checkVolume checks the claim's PersistentVolume: made by the class's
// driver, of the size asked, pinned to the node that holds it.
func (v volumeTest) checkVolume(t *testing.T, provisioner string) *corev1.PersistentVolume {
	t.Helper()
	pvc, err := v.cs.CoreV1().PersistentVolumeClaims(v.ns).Get(t.Context(), v.claim, metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim %s: %v, %v; want Bound", v.claim, pvc, err)
	}
	pv, err := v.cs.CoreV1().PersistentVolumes().Get(t.Context(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != provisioner || pv.Spec.NodeAffinity == nil {
		t.Errorf("volume %s: CSI %+v, node affinity %v; want driver %s and a node", pv.Name, pv.Spec.CSI, pv.Spec.NodeAffinity, provisioner)
	}
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Value() != 64<<20 {
		t.Errorf("volume %s: capacity %s, want 64Mi", pv.Name, got.String())
	}
	if onHost(pv.Name) == errNotOnHost {
		t.Errorf("volume %s: not under %s on the host", pv.Name, workspaceVolumes)
	}
	return pv
}

func (v volumeTest) deletePod(t *testing.T, name string) {
	t.Helper()
	if err := v.cs.CoreV1().Pods(v.ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "pod "+name, func(ctx context.Context) error {
		_, err := v.cs.CoreV1().Pods(v.ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// deleteClaim deletes the claim and waits until its volume is gone,
// from the API and from the node.
func (v volumeTest) deleteClaim(t *testing.T, pv *corev1.PersistentVolume) {
	t.Helper()
	if err := v.cs.CoreV1().PersistentVolumeClaims(v.ns).Delete(t.Context(), v.claim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "volume "+pv.Name, func(ctx context.Context) error {
		_, err := v.cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return err
	})
	if onHost(pv.Name) == nil {
		t.Errorf("volume %s: still on the host under %s after its claim and volume were deleted", pv.Name, workspaceVolumes)
	}
}

// errNotOnHost says the volume directory exists neither way: the test
// runs elsewhere than on the cluster's host, or the volume is gone.
var errNotOnHost = errors.New("not on this host")

// onHost reports whether the node's copy of volume pv is on this host:
// nil if it is, errNotOnHost if the host has the driver's directory but
// not the volume, another error if the host is not the cluster's or the
// test may not look.
func onHost(pv string) error {
	if _, err := os.Stat(workspaceVolumes); err != nil {
		return err
	}
	_, err := os.Stat(filepath.Join(workspaceVolumes, pv))
	if errors.Is(err, fs.ErrNotExist) {
		return errNotOnHost
	}
	return err // nil, or not ours to look at (not root)
}

func waitGone(t *testing.T, what string, get func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := get(t.Context())
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there a minute after deletion: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (v volumeTest) events(t *testing.T) string {
	evs, err := v.cs.CoreV1().Events(v.ns).List(context.WithoutCancel(t.Context()), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range evs.Items {
		fmt.Fprintf(&b, "\n  %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}

// exec runs script with sh in the pod's container and returns its
// output (stdout and stderr) and exit code.
func (k kubectl) exec(t *testing.T, ns, pod, script string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, "--kubeconfig", k.kubeconfig, "--cache-dir", k.cache,
		"-n", ns, "exec", pod, "--", "sh", "-c", script)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("kubectl exec %s: %v: %s", pod, err, out)
	return "", 0
}

func ptrTo[T any](v T) *T { return &v }
