package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
)

// A paused sandbox is its Secret, marked (AnnotationPausedAt), and its
// workspace claim, without a pod: its CPU and memory go back to the
// node, its files and its record stay, and every gateway replica reads
// the state from the record. Resume makes the pod again from the record
// (AnnotationLimits and the rest), on the same claim. This is how
// kubernetes-sigs/agent-sandbox and openkruise/agents pause too; only the
// workspace survives (processes, /tmp and memory do not).

var _ sandbox.Pauser = (*Provider)(nil)

// Pause marks sandbox id's Secret paused and deletes its pod, waiting
// until the pod is gone. The mark is written first: a pause cut short
// leaves a marked Secret beside a live pod, which is a running sandbox,
// never a sandbox that is neither. Pausing a paused sandbox does
// nothing. With WorkspaceEmptyDir there is nothing to keep:
// ErrCannotPause.
func (p *Provider) Pause(ctx context.Context, id, reason string) error {
	start := time.Now()
	if !p.cfg.durable() {
		return fmt.Errorf("pause sandbox %s: %w: its /workspace is an emptyDir, which dies with its pod; give the gateway a StorageClass that enforces sizes (--k8s-workspace-class)", id, sandbox.ErrCannotPause)
	}
	secret, err := p.record(ctx, id, "pause")
	if err != nil {
		return err
	}
	if secret.Annotations[AnnotationPausedAt] != "" {
		if _, err := p.Get(ctx, id); isNotFound(err) {
			return nil // paused already
		}
	}
	// What the paused sandbox holds of the cluster's storage: its
	// volume's provisioned size (the API says nothing of the blocks in
	// use), recorded for every replica's quota (Info.DiskBytes).
	pvc, err := p.cs.CoreV1().PersistentVolumeClaims(p.cfg.Namespace).Get(ctx, objectName(id), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("pause sandbox %s: its workspace claim: %w", id, apiErr(err))
	}
	size := pvc.Status.Capacity.Storage().Value()
	if err := p.annotate(ctx, "secrets", id, AnnotationPausedBytes, strconv.FormatInt(size, 10),
		AnnotationPausedFor, sandbox.PauseReason(reason), AnnotationPausedAt, start.UTC().Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("pause sandbox %s: mark it paused: %w", id, err)
	}
	if _, err := p.deletePod(ctx, id, true); err != nil {
		return fmt.Errorf("pause sandbox %s: %w", id, err)
	}
	p.log.Info("sandbox paused", "sandbox_id", id, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// Resume makes paused sandbox id's pod again from its record, on the
// same workspace claim, and returns once its runner answers. The run it
// starts may last a whole maximum lifetime: an expiry that would come
// sooner is moved. A sandbox whose pod runs, or starts (another replica
// resumes it), is returned once it answers (a stale mark is cleared);
// one that is neither running nor marked is ErrNotPaused.
func (p *Provider) Resume(ctx context.Context, id string) (sandbox.Sandbox, error) {
	for try := 1; ; try++ {
		sb, err := p.resumeOnce(ctx, id)
		if !errors.Is(err, errResumeRace) || try == resumeTries {
			return sb, err
		}
	}
}

// resumeTries bounds Resume's reads of a record that replicas resuming
// the sandbox at once keep changing.
const resumeTries = 3

// errResumeRace: the record changed between Resume's read and its
// write, as when another replica resumes the sandbox at the same time.
var errResumeRace = errors.New("its record changed meanwhile (another replica resuming it?)")

func (p *Provider) resumeOnce(ctx context.Context, id string) (sandbox.Sandbox, error) {
	start := time.Now()
	secret, err := p.record(ctx, id, "resume")
	if err != nil {
		return nil, err
	}
	if sb, err := p.live(ctx, id); sb != nil || err != nil {
		if err == nil {
			p.clearPaused(ctx, secret)
		}
		return sb, err
	}
	pausedAt := secret.Annotations[AnnotationPausedAt]
	if pausedAt == "" {
		// Another replica may have written the record and not yet made
		// the pod: it stamped the resume first.
		if resumed := parseTime(secret.Annotations[AnnotationResumedAt]); time.Since(resumed) < createTimeout {
			return p.awaitPod(ctx, id, resumed.Add(createTimeout))
		}
		return nil, fmt.Errorf("resume sandbox %s: %w", id, sandbox.ErrNotPaused)
	}
	// A pod left terminating by the pause: the claim is ReadWriteOncePod.
	if _, err := p.deletePod(ctx, id, true); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	spec := specFromRecord(secret.ObjectMeta)
	spec.ExpiresAt = maxTime(spec.ExpiresAt, start.Add(spec.Limits.WithDefaults().MaxLifetime))
	want := Secret(spec, p.cfg, start)
	maps.Copy(secret.Annotations, want.Annotations)
	secret.Annotations[AnnotationResumedAt] = start.UTC().Format(time.RFC3339Nano)
	delete(secret.Annotations, AnnotationPausedAt)
	pausedFor := secret.Annotations[AnnotationPausedFor]
	delete(secret.Annotations, AnnotationPausedFor)
	// Of replicas resuming it at once, one writes; the others read again
	// and find its pod.
	secret, err = p.cs.CoreV1().Secrets(p.cfg.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return nil, fmt.Errorf("resume sandbox %s: %w", id, errResumeRace)
	case err != nil:
		return nil, fmt.Errorf("resume sandbox %s: update its record: %w", id, apiErr(err))
	}
	p.wrote(secret)
	if _, err := p.createClaim(ctx, WorkspaceClaim(spec, p.cfg, secret)); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	made := &made{}
	sb, err := p.run(ctx, spec, secret, made)
	if err != nil {
		// Paused again, with its files: the next resume tries afresh.
		p.rollback(ctx, id, made)
		if aerr := p.annotate(context.WithoutCancel(ctx), "secrets", id, AnnotationPausedFor, pausedFor, AnnotationPausedAt, pausedAt); aerr != nil {
			p.log.Error("mark a sandbox whose resume failed paused again", "sandbox_id", id, "error", aerr)
		}
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	sb.info.ResumedAt = parseTime(secret.Annotations[AnnotationResumedAt])
	p.log.Info("sandbox resumed", "sandbox_id", id, "pod_uid", sb.info.ContainerID, "duration_ms", time.Since(start).Milliseconds())
	return sb, nil
}

// awaitPod waits, until deadline, for the pod another replica's resume
// of sandbox id makes, and returns it once its runner answers; a resume
// that made none by then failed, and the sandbox is not paused.
func (p *Provider) awaitPod(ctx context.Context, id string, deadline time.Time) (sandbox.Sandbox, error) {
	for {
		sb, err := p.live(ctx, id)
		if sb != nil || err != nil {
			return sb, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("resume sandbox %s: another replica's resume made no pod: %w", id, sandbox.ErrNotPaused)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("resume sandbox %s: %w", id, ctx.Err())
		case <-time.After(readyPoll * 5):
		}
	}
}

// live returns sandbox id's pod's handle once its runner answers, if it
// has a pod that runs or is starting; nil and no error if it has none
// (or a dead one).
func (p *Provider) live(ctx context.Context, id string) (sandbox.Sandbox, error) {
	pod, err := p.cs.CoreV1().Pods(p.cfg.Namespace).Get(ctx, objectName(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && (!ours(pod.ObjectMeta, p.cfg) || dead(state(pod))):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("resume sandbox %s: get pod: %w", id, apiErr(err))
	case state(pod) == StateRunning:
		return p.handle(pod), nil
	}
	if pod, err = p.waitReady(ctx, pod); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: its pod started elsewhere: %w", id, err)
	}
	h := p.handle(pod)
	h.info.State = StateRunning
	return h, nil
}

// record returns sandbox id's Secret, or ErrNotFound when it has none (or
// it is another instance's, or being deleted).
func (p *Provider) record(ctx context.Context, id, verb string) (*corev1.Secret, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("%s sandbox %q: %w", verb, id, sandbox.ErrNotFound)
	}
	secret, err := p.cs.CoreV1().Secrets(p.cfg.Namespace).Get(ctx, objectName(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && (!ours(secret.ObjectMeta, p.cfg) || secret.DeletionTimestamp != nil):
		return nil, fmt.Errorf("%s sandbox %s: %w", verb, id, sandbox.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("%s sandbox %s: get secret: %w", verb, id, apiErr(err))
	}
	return secret, nil
}

// clearPaused removes a stale pause mark from a running sandbox's Secret.
func (p *Provider) clearPaused(ctx context.Context, secret *corev1.Secret) {
	if secret.Annotations[AnnotationPausedAt] == "" {
		return
	}
	if err := p.annotate(ctx, "secrets", secret.Annotations[AnnotationSandbox], AnnotationPausedAt, "", AnnotationPausedFor, ""); err != nil {
		p.log.Warn("clear the pause mark of a running sandbox", "sandbox_id", secret.Annotations[AnnotationSandbox], "error", err)
	}
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
