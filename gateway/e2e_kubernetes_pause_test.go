package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestKubernetesPauseCrashPoints: a replica that dies in the middle of a
// pause or a resume on Kubernetes leaves the sandbox running or paused,
// with its files, never neither and never two pods; the replica that
// serves its next call carries on from what it finds. The provider's
// steps (sandbox/kubernetes/pause.go) leave three states between the
// finished ones, made here through the API server before the crash:
//   - the record marked paused while the pod still runs: a pause cut
//     short before it deleted the pod;
//   - the record marked and the pod gone: a pause cut short before it
//     saw the pod go (the same as a finished pause);
//   - the record stamped resumed, unmarked, and no pod: a resume cut
//     short between its write of the record and its pod.
func TestKubernetesPauseCrashPoints(t *testing.T) {
	rc := sandboxtest.RequireKubernetes(t)
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	replicated := func(c *gateway.Config) { c.Replicated = true } // as the shipped Kubernetes flags set
	for _, tc := range []struct {
		name string
		// cut makes the state the crash leaves, with the crashing
		// replica's client at hand.
		cut func(t *testing.T, tg *testGateway, id string)
		// paused: the state is a paused sandbox, whose next call resumes
		// it (and says so).
		paused bool
	}{
		{name: "marked, pod running", cut: func(t *testing.T, tg *testGateway, id string) {
			annotateRecord(t, cs, tg.Instance, id, map[string]any{kubernetes.AnnotationPausedAt: time.Now().UTC().Format(time.RFC3339Nano)})
		}},
		{name: "marked, pod gone", paused: true, cut: func(t *testing.T, tg *testGateway, id string) {
			annotateRecord(t, cs, tg.Instance, id, map[string]any{kubernetes.AnnotationPausedAt: time.Now().UTC().Format(time.RFC3339Nano)})
			deletePodAndWait(t, cs, tg.Instance, id)
		}},
		{name: "resume written, no pod", cut: func(t *testing.T, tg *testGateway, id string) {
			mustOK(t, "sandbox_pause", call(t, modernClient(t, tg.URL), "sandbox_pause", map[string]any{"sandbox_id": id}))
			annotateRecord(t, cs, tg.Instance, id, map[string]any{
				kubernetes.AnnotationPausedAt:  nil,
				kubernetes.AnnotationResumedAt: time.Now().UTC().Format(time.RFC3339Nano),
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := kubeInstanceOf(t, rc, "runc")
			a := inst.start(t, replicated)
			ca := modernClient(t, a.URL)
			id := createOn(t, ca, nil)
			mustOK(t, "write_file", call(t, ca, "write_file", map[string]any{"sandbox_id": id, "path": "kept.txt", "content": "kept"}))
			tc.cut(t, a, id)
			a.crash()

			b := inst.start(t, replicated)
			want := kubernetes.StateRunning
			if tc.paused {
				want = sandbox.StatePaused
			} else if tc.name == "resume written, no pod" {
				want = kubernetes.StateNoPod
			}
			if left := listedBy(t, b.Custom); len(left) != 1 || left[0].ID != id || alive(left[0].State) != want {
				t.Fatalf("after the crash: %+v; want sandbox %s alone, %s", left, id, want)
			}
			res := mustOK(t, "read_file after the crash", call(t, modernClient(t, b.URL), "read_file", map[string]any{"sandbox_id": id, "path": "kept.txt"}))
			if text(res) != "kept" || strings.Contains(allText(res), "was paused") != tc.paused {
				t.Fatalf("read_file after the crash: %q; want the file, with a resume note only if it was paused", allText(res))
			}
			left := listedBy(t, b.Custom)
			if len(left) != 1 || alive(left[0].State) != kubernetes.StateRunning {
				t.Fatalf("after the call: %+v; want one sandbox, running", left)
			}
			rec, err := cs.CoreV1().Secrets(inst.Namespace).Get(t.Context(), "sandgate-"+id, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if at := rec.Annotations[kubernetes.AnnotationPausedAt]; at != "" {
				t.Fatalf("the running sandbox's record is still marked paused (at %s): the next reconciliation would count it paused", at)
			}
			pods, err := cs.CoreV1().Pods(inst.Namespace).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			live := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
					live++
				}
			}
			if live != 1 {
				t.Fatalf("%d live pods in the namespace after the call; want the sandbox's one", live)
			}
		})
	}
}

// alive is a pod's state, with a pod the kubelet has not yet reported
// running (its runner answers before) as running.
func alive(state string) string {
	if state == kubernetes.StatePending {
		return kubernetes.StateRunning
	}
	return state
}

// listedBy is what provider p lists, states included.
func listedBy(t *testing.T, p sandbox.Provider) []sandbox.Info {
	t.Helper()
	infos, err := p.List(t.Context(), sandbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// annotateRecord sets (or, for nil, removes) annotations of sandbox id's
// Secret, as a provider step would.
func annotateRecord(t *testing.T, cs *clientset.Clientset, ns, id string, set map[string]any) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
	if _, err := cs.CoreV1().Secrets(ns).Patch(t.Context(), "sandgate-"+id, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate sandbox %s's record: %v", id, err)
	}
}

// deletePodAndWait deletes sandbox id's pod and waits until it is gone.
func deletePodAndWait(t *testing.T, cs *clientset.Clientset, ns, id string) {
	t.Helper()
	pods := cs.CoreV1().Pods(ns)
	if err := pods.Delete(t.Context(), "sandgate-"+id, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete sandbox %s's pod: %v", id, err)
	}
	waitFor(t, 2*time.Minute, "the pod to be gone", func() bool {
		_, err := pods.Get(t.Context(), "sandgate-"+id, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
