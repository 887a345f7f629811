package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
)

const (
	// rollbackTimeout bounds the cleanup of a failed Create or Recreate,
	// which runs even when the caller's context is already cancelled.
	rollbackTimeout = 30 * time.Second
	// createTimeout bounds an uncancellable create request.
	createTimeout = 30 * time.Second
)

// Create makes the sandbox's Secret, then its pod (owned by the Secret),
// and returns once the runner answers on the pod's IP. On any error,
// the caller's cancellation included, it deletes what it made.
func (p *Provider) Create(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, retErr error) {
	start := time.Now()
	if spec.ID == "" {
		spec.ID = newID()
	} else if !idPattern.MatchString(spec.ID) {
		return nil, fmt.Errorf("create sandbox: id %q must match %s", spec.ID, idPattern)
	}
	spec = normalize(spec, p.cfg, start)
	secret, err := p.createSecret(ctx, Secret(spec, p.cfg, start))
	if secret == nil {
		return nil, err
	}
	made := &made{secret: secret}
	defer func() {
		if retErr != nil {
			p.rollback(ctx, spec.ID, made)
		}
	}()
	if err != nil {
		return nil, err
	}
	if p.cfg.durable() {
		made.claim = true
		if _, err := p.createClaim(ctx, WorkspaceClaim(spec, p.cfg, secret)); err != nil {
			return nil, err
		}
	}
	sb, err := p.run(ctx, spec, secret, made)
	if err != nil {
		return nil, err
	}
	p.log.Info("sandbox created", "sandbox_id", spec.ID, "pod_uid", sb.info.ContainerID,
		"image", spec.Image, "duration_ms", time.Since(start).Milliseconds())
	return sb, nil
}

// Recreate replaces the pod of sandbox spec.ID: it deletes the old pod,
// if any, waits until it is gone, and starts a new one from the
// sandbox's Secret, whose labels and annotations it brings up to date
// with spec. The new pod mounts the same workspace claim, so the files
// are kept (with WorkspaceEmptyDir they die with the old pod; a sandbox
// made before its gateway had workspace claims gets a new, empty one).
// A sandbox whose Secret is gone was removed: ErrNotFound. On error the
// new pod is deleted again; the Secret stays, for a later Recreate or
// Remove.
func (p *Provider) Recreate(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, retErr error) {
	start := time.Now()
	if !idPattern.MatchString(spec.ID) {
		return nil, fmt.Errorf("recreate sandbox %q: %w", spec.ID, sandbox.ErrNotFound)
	}
	secrets := p.cs.CoreV1().Secrets(p.cfg.Namespace)
	secret, err := secrets.Get(ctx, objectName(spec.ID), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && (!ours(secret.ObjectMeta, p.cfg) || secret.DeletionTimestamp != nil):
		return nil, fmt.Errorf("recreate sandbox %s: %w", spec.ID, sandbox.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("recreate sandbox %s: get secret: %w", spec.ID, apiErr(err))
	}
	if _, err := p.deletePod(ctx, spec.ID, true); err != nil {
		return nil, fmt.Errorf("recreate sandbox %s: %w", spec.ID, err)
	}
	spec = normalize(spec, p.cfg, start)
	want := Secret(spec, p.cfg, start)
	delete(secret.Labels, LabelOwnerHash)
	delete(secret.Labels, LabelSessionHash)
	delete(secret.Labels, LabelClientHash)
	delete(secret.Labels, LabelTenantHash)
	maps.Copy(secret.Labels, want.Labels)
	maps.Copy(secret.Annotations, want.Annotations)
	delete(secret.Annotations, AnnotationPausedAt) // a replacement runs
	if secret, err = secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("recreate sandbox %s: update secret: %w", spec.ID, apiErr(err))
	}
	p.wrote(secret)
	made := &made{} // the Secret and the claim predate this call: a rollback keeps them
	defer func() {
		if retErr != nil {
			p.rollback(ctx, spec.ID, made)
		}
	}()
	kept := false
	if p.cfg.durable() {
		if kept, err = p.createClaim(ctx, WorkspaceClaim(spec, p.cfg, secret)); err != nil {
			return nil, err
		}
	}
	sb, err := p.run(ctx, spec, secret, made)
	if err != nil {
		return nil, err
	}
	p.log.Info("sandbox recreated", "sandbox_id", spec.ID, "pod_uid", sb.info.ContainerID,
		"workspace_kept", kept, "duration_ms", time.Since(start).Milliseconds())
	return sb, nil
}

// run creates the pod of spec, owned by secret, and waits for its runner,
// recording in made that a pod may exist.
func (p *Provider) run(ctx context.Context, spec sandbox.Spec, secret *corev1.Secret, made *made) (*handle, error) {
	made.pod = true
	pod, err := p.createPod(ctx, Pod(spec, p.cfg, secret))
	if errors.Is(err, errPodExists) {
		made.pod = false // someone else's (another replica's Recreate): not ours to delete
	}
	if err != nil {
		return nil, err
	}
	pod, err = p.waitReady(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", spec.ID, err)
	}
	h := p.handle(pod)
	h.info.State = StateRunning // its runner answered, whatever the status says yet
	return h, nil
}

// createSecret creates the sandbox's Secret. The request is not cancelled
// with ctx: the API server finishes a create whose client went away, and
// the caller must learn whether there is something to roll back.
func (p *Provider) createSecret(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	id := s.Annotations[AnnotationSandbox]
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	created, err := p.cs.CoreV1().Secrets(p.cfg.Namespace).Create(cctx, s, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create sandbox %s: id already in use", id)
	case err != nil:
		return nil, fmt.Errorf("create sandbox %s: create secret: %w", id, apiErr(err))
	}
	p.wrote(created)
	if err := ctx.Err(); err != nil {
		// Returned all the same, so that the caller rolls it back.
		return created, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	return created, nil
}

// createPod creates pod, uncancelled for the same reason as createSecret.
func (p *Provider) createPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	id := pod.Annotations[AnnotationSandbox]
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	created, err := p.cs.CoreV1().Pods(p.cfg.Namespace).Create(cctx, pod, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create pod for sandbox %s: %w", id, errPodExists)
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// Admission said no: a pod security level, a quota, a missing
		// RuntimeClass. Its message names which.
		return nil, fmt.Errorf("%w: create pod for sandbox %s: %w", sandbox.ErrStartFailed, id, err)
	case err != nil:
		return nil, fmt.Errorf("create pod for sandbox %s: %w", id, apiErr(err))
	}
	if err := ctx.Err(); err != nil {
		return created, fmt.Errorf("create pod for sandbox %s: %w", id, err)
	}
	return created, nil
}

// createClaim creates the sandbox's workspace claim, uncancelled for the
// same reason as createSecret. One that exists already is the sandbox's
// (the Secret of the same name is): it reports true, the files are kept.
func (p *Provider) createClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (existed bool, err error) {
	id := pvc.Annotations[AnnotationSandbox]
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	_, err = p.cs.CoreV1().PersistentVolumeClaims(p.cfg.Namespace).Create(cctx, pvc, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return true, nil
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// A storage quota, a missing permission, a class that does not
		// take ReadWriteOncePod: its message names which.
		return false, fmt.Errorf("%w: create workspace claim for sandbox %s (StorageClass %s): %w", sandbox.ErrStartFailed, id, p.workspaceClassName(), err)
	case err != nil:
		return false, fmt.Errorf("create workspace claim for sandbox %s: %w", id, apiErr(err))
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("create workspace claim for sandbox %s: %w", id, err)
	}
	return false, nil
}

// workspaceClassName names the workspace StorageClass for messages.
func (p *Provider) workspaceClassName() string {
	if p.cfg.WorkspaceClass == "" {
		return "(the cluster's default)"
	}
	return p.cfg.WorkspaceClass
}

// deleteClaim deletes sandbox id's workspace claim, if any, without
// waiting: the volume goes once no pod uses it (the claim's protection
// finalizer), and with the StorageClass's reclaim policy Delete its
// storage with it. The Secret owns the claim too, so a Secret deleted
// by anyone else takes the claim along (the garbage collector).
func (p *Provider) deleteClaim(ctx context.Context, id string) error {
	if !p.cfg.durable() {
		return nil
	}
	err := p.cs.CoreV1().PersistentVolumeClaims(p.cfg.Namespace).Delete(ctx, objectName(id), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete workspace claim: %w", apiErr(err))
	}
	return nil
}

// errPodExists: the sandbox's pod name is taken, by a pod that is still
// terminating or that a concurrent Recreate made.
var errPodExists = errors.New("its pod already exists (still terminating, or made by a concurrent Recreate)")

// made records what a Create or Recreate made, for its rollback.
type made struct {
	secret *corev1.Secret // nil when the Secret predates the call
	claim  bool           // a workspace claim create was attempted
	pod    bool           // a pod create was attempted
}

// rollback deletes what a failed Create or Recreate made. It runs on its
// own context: a create that failed because its caller gave up must
// still clean up. A pod whose create never answered is deleted by name,
// which this call owns: its Secret (same name) is this sandbox's. The pod
// is deleted gracefully and not waited for: it stays under the
// NetworkPolicy until the kubelet has killed it (see deletePod).
func (p *Provider) rollback(ctx context.Context, id string, m *made) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if m.pod {
		if _, err := p.deletePod(ctx, id, false); err != nil {
			p.log.Error("roll back sandbox: delete pod", "sandbox_id", id, "error", err)
		}
	}
	if m.claim {
		if err := p.deleteClaim(ctx, id); err != nil {
			p.log.Error("roll back sandbox: delete workspace claim", "sandbox_id", id, "error", err)
		}
	}
	if m.secret != nil {
		if err := p.deleteSecret(ctx, m.secret); err != nil {
			p.log.Error("roll back sandbox: delete secret", "sandbox_id", id, "error", err)
		}
	}
}
