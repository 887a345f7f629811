package kubernetes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestDeadPod: a pod deleted from outside (kubectl delete pod), or whose
// runner died, is a dead sandbox: Get and Dial report ErrNotFound at
// once, List still shows the sandbox, and Recreate brings it back under
// the same id, on the same workspace claim (the shipped default): its
// files are there. A Secret deleted from outside takes the pod and the
// claim with it.
func TestDeadPod(t *testing.T) {
	kill := map[string]func(t *testing.T, env *testEnv, sb sandbox.Sandbox){
		"deleted": func(t *testing.T, env *testEnv, sb sandbox.Sandbox) {
			err := env.cs.CoreV1().Pods(env.cfg.Namespace).Delete(t.Context(), "sandgate-"+sb.ID(), metav1.DeleteOptions{})
			if err != nil {
				t.Fatalf("delete pod: %v", err)
			}
		},
		"runner exited": func(t *testing.T, env *testEnv, sb sandbox.Sandbox) {
			// The runner stops on SIGTERM; code in the sandbox may send it.
			// The call dies with the runner, so its error is expected.
			c, err := protocol.Dial(t.Context(), sb.Dial)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = c.Stream(t.Context(), protocol.OpExec, protocol.ExecRequest{Argv: []string{"kill", "-TERM", "1"}}, nil)
		},
	}
	for _, rtc := range runtimeClasses {
		t.Run(rtc, func(t *testing.T) {
			env := newEnv(t, rtc)
			for name, kill := range kill {
				t.Run(name, func(t *testing.T) {
					spec := sandbox.Spec{Image: testImage, Owner: "owner-" + randomHex(8), ExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Second)}
					sb := env.create(t, spec)
					if out, _ := exec(t, sb, "sh", "-c", "echo kept > /workspace/f && cat /workspace/f"); out != "kept\n" {
						t.Fatalf("write a file: %q", out)
					}
					kill(t, env, sb)
					waitDead(t, env.p, sb)
					if _, err := sb.Dial(t.Context()); !errors.Is(err, sandbox.ErrNotFound) {
						t.Errorf("Dial of a dead sandbox: err = %v, want ErrNotFound", err)
					}
					infos, err := env.p.List(t.Context(), sandbox.Filter{Owner: spec.Owner})
					if err != nil || len(infos) != 1 || infos[0].ID != sb.ID() || infos[0].State == kubernetes.StateRunning {
						t.Errorf("List = %+v, %v: want the dead sandbox, not running", infos, err)
					}
					spec.ID = sb.ID()
					again, err := env.p.Recreate(t.Context(), spec)
					if err != nil {
						t.Fatalf("Recreate: %v", err)
					}
					if again.ID() != sb.ID() || again.Info().Owner != spec.Owner || !again.Info().WorkspaceDurable ||
						again.Info().ContainerID == sb.Info().ContainerID {
						t.Errorf("Recreate gave %+v, want a new pod for %s of %s, workspace durable", again.Info(), sb.ID(), spec.Owner)
					}
					if out, code := exec(t, again, "cat", "/workspace/f"); code != 0 || out != "kept\n" {
						t.Errorf("workspace after Recreate: %q (exit %d), want the file written before", out, code)
					}
					if _, err := env.p.Get(t.Context(), sb.ID()); err != nil {
						t.Errorf("Get after Recreate: %v", err)
					}
				})
			}
			t.Run("secret deleted", func(t *testing.T) {
				// An operator's kubectl delete secret removes the sandbox:
				// the garbage collector takes the pod.
				sb := env.create(t, sandbox.Spec{})
				err := env.cs.CoreV1().Secrets(env.cfg.Namespace).Delete(t.Context(), "sandgate-"+sb.ID(), metav1.DeleteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				waitDead(t, env.p, sb)
				spec := sandbox.Spec{ID: sb.ID(), Image: testImage}
				if _, err := env.p.Recreate(t.Context(), spec); !errors.Is(err, sandbox.ErrNotFound) {
					t.Errorf("Recreate after the Secret was deleted: err = %v, want ErrNotFound", err)
				}
				claims := env.cs.CoreV1().PersistentVolumeClaims(env.cfg.Namespace)
				for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
					_, err := claims.Get(t.Context(), "sandgate-"+sb.ID(), metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the workspace claim 90 s after its Secret was deleted: %v; want it gone", err)
					}
				}
			})
		})
	}
}

// waitDead waits until Get reports sb gone. A deleted pod is terminating
// at once; a runner that exits shows in the pod's status within the
// kubelet's relist period.
func waitDead(t *testing.T, p *kubernetes.Provider, sb sandbox.Sandbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		_, err := p.Get(ctx, sb.ID())
		if errors.Is(err, sandbox.ErrNotFound) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sandbox %s still found after its pod died: %v", sb.ID(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
