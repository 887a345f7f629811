package kubernetes_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestDurableWorkspace: with the shipped default (a claim of the
// cluster's default StorageClass, which the local cluster's csi-workspace
// is), /workspace is a volume of the sandbox's workspace size: writing
// past it is ENOSPC for the writer while the pod runs on; the files
// outlive the pod (deleted behind the provider's back, as an eviction or
// a drained node would) and are there in the pod Recreate makes; Remove
// takes the claim and its volume. Under runc and gVisor.
func TestDurableWorkspace(t *testing.T) {
	for _, rtc := range runtimeClasses {
		t.Run(rtc, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, rtc)
			if !env.p.WorkspaceDurable() {
				t.Fatal("the provider's workspace is not durable with the shipped default")
			}
			spec := sandbox.Spec{Image: testImage, Limits: sandbox.Limits{WorkspaceBytes: 64 << 20}}
			sb := env.create(t, spec)
			spec.ID = sb.ID()
			if !sb.Info().WorkspaceDurable {
				t.Error("Info.WorkspaceDurable = false")
			}
			claims := env.cs.CoreV1().PersistentVolumeClaims(env.cfg.Namespace)
			pvc, err := claims.Get(t.Context(), "sandgate-"+sb.ID(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the sandbox's workspace claim: %v", err)
			}
			if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
				t.Fatalf("claim %s is %s, want Bound once its pod runs", pvc.Name, pvc.Status.Phase)
			}

			out, _ := exec(t, sb, "sh", "-c", `echo kept > /workspace/marker || exit 1
				dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1; echo "dd=$?"; df -k /workspace | tail -1`)
			t.Logf("writing 100 MiB into a 64 MiB workspace:\n%s", out)
			if !strings.Contains(out, "No space left on device") || strings.Contains(out, "dd=0") {
				t.Fatalf("writing past the workspace's size: want ENOSPC for the writer:\n%s", out)
			}
			// The kubelet's eviction manager looks every 10 s: a pod it
			// would evict for a full volume is gone within that.
			for deadline := time.Now().Add(12 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
				pod, err := env.cs.CoreV1().Pods(env.cfg.Namespace).Get(t.Context(), "sandgate-"+sb.ID(), metav1.GetOptions{})
				// Running, or still reported Pending: the kubelet reports a
				// started container up to a second late.
				if err != nil || pod.DeletionTimestamp != nil || pod.Status.Reason == "Evicted" ||
					pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
					t.Fatalf("the pod after its workspace filled: %v, phase %s reason %q deleting %v; want it running",
						err, pod.Status.Phase, pod.Status.Reason, pod.DeletionTimestamp != nil)
				}
			}

			// Pod loss: deleted by someone else, then replaced.
			if err := env.cs.CoreV1().Pods(env.cfg.Namespace).Delete(t.Context(), "sandgate-"+sb.ID(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			again, err := env.p.Recreate(t.Context(), spec)
			if err != nil {
				t.Fatalf("Recreate after the pod was lost: %v", err)
			}
			if out, code := exec(t, again, "cat", "/workspace/marker"); code != 0 || out != "kept\n" {
				t.Fatalf("the workspace after the pod was replaced: %q (exit %d), want the file written before", out, code)
			}

			if err := env.p.Remove(t.Context(), sb.ID()); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			pvs := env.cs.CoreV1().PersistentVolumes()
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			for {
				_, cerr := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
				_, verr := pvs.Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
				if apierrors.IsNotFound(cerr) && apierrors.IsNotFound(verr) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("after Remove: claim %v, volume %s %v; want both gone", cerr, pvc.Spec.VolumeName, verr)
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
}

// TestConcurrentResume: two replicas resuming one paused sandbox at once
// both get it, running on one pod: one makes the pod, the other finds it
// and waits for its runner.
func TestConcurrentResume(t *testing.T) {
	env := newEnv(t, "runc")
	other, err := kubernetes.New(t.Context(), env.cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb := env.create(t, sandbox.Spec{Image: testImage})
	if out, _ := exec(t, sb, "sh", "-c", "echo kept > /workspace/f && cat /workspace/f"); out != "kept\n" {
		t.Fatalf("write a file: %q", out)
	}
	if err := env.p.Pause(t.Context(), sb.ID(), "test"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]sandbox.Sandbox, 2)
	errs := make([]error, 2)
	for i, p := range []*kubernetes.Provider{env.p, other} {
		wg.Go(func() { got[i], errs[i] = p.Resume(t.Context(), sb.ID()) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("replica %d's Resume: %v", i, errs[i])
		}
	}
	if a, b := got[0].Info().ContainerID, got[1].Info().ContainerID; a != b {
		t.Errorf("the replicas resumed onto pods %s and %s, want one", a, b)
	}
	for i := range got {
		if out, code := exec(t, got[i], "cat", "/workspace/f"); code != 0 || out != "kept\n" {
			t.Errorf("replica %d's handle: %q (exit %d), want the file", i, out, code)
		}
	}
}
