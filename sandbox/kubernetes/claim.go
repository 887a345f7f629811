package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/sandbox"
)

// Warm pool claims. A pooled sandbox is made like any other, with
// Spec.Pool set and no owner. Unlike a Docker container's, a Secret's and
// a pod's labels and annotations can change, so the claim is written
// where every replica reads it, on the sandbox's own objects:
//
//  1. the Secret, the record, with one JSON patch whose first operations
//     test that it is this instance's sandbox, made for that pool and
//     still without an owner, and whose others write the claimant's
//     labels and annotations. The API server applies a patch to the
//     object as it is when it writes, tests included, so of two claims
//     of one sandbox exactly one passes its tests;
//  2. the pod, the same way, and its activeDeadlineSeconds brought down
//     to the claim's expiry (the API server lets it be lowered, never
//     raised: a pooled pod is made with a later one, see the gateway's
//     pool).
//
// List takes what a sandbox is from its Secret (withRecord), so a claim
// cut short between the two writes (a gateway that died) still reads as
// the claimant's everywhere but in Get and in label selectors on pods.
// RemoveUnclaimed deletes a Secret only at the resourceVersion it found
// unclaimed, so a replica that removes another's pooled sandbox as
// abandoned never removes one that was claimed meanwhile.

var _ sandbox.PoolClaims = (*Provider)(nil)

// Claim makes the unclaimed pooled sandbox id, made for pool spec.Pool,
// the sandbox of spec as if it were created with it now, and returns how
// it describes itself.
func (p *Provider) Claim(ctx context.Context, id string, spec sandbox.Spec) (sandbox.Info, error) {
	if !idPattern.MatchString(id) || spec.Pool == "" {
		return sandbox.Info{}, fmt.Errorf("claim sandbox %q of pool %q: %w", id, spec.Pool, sandbox.ErrClaimed)
	}
	start := time.Now()
	pods := p.cs.CoreV1().Pods(p.cfg.Namespace)
	pod, err := pods.Get(ctx, objectName(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && !ours(pod.ObjectMeta, p.cfg):
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: %w", id, sandbox.ErrNotFound)
	case err != nil:
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: get pod: %w", id, apiErr(err))
	case dead(state(pod)):
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: pod is %s: %w", id, state(pod), sandbox.ErrNotFound)
	}
	now := time.Now()
	spec.ID = id
	spec = normalize(spec, p.cfg, now)
	want := meta(spec, p.cfg, now)
	ops := claimOps(id, spec.Pool, p.cfg, want)
	opts := metav1.PatchOptions{FieldManager: "sandgate-gateway"}
	patch, _ := json.Marshal(ops) // strings always encode
	secret, err := p.cs.CoreV1().Secrets(p.cfg.Namespace).Patch(ctx, objectName(id), types.JSONPatchType, patch, opts)
	switch {
	case apierrors.IsNotFound(err):
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: %w", id, sandbox.ErrNotFound)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: %w (or not a sandbox of pool %s): %v", id, sandbox.ErrClaimed, spec.Pool, err)
	case err != nil:
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: patch secret: %w", id, apiErr(err))
	}
	p.wrote(secret)
	// The claim is recorded. The pod follows: its annotations for Get,
	// its labels for selectors, and the kubelet's deadline.
	ops = append(ops, map[string]any{"op": "add", "path": "/spec/activeDeadlineSeconds", "value": claimedDeadline(pod, spec.ExpiresAt)})
	patch, _ = json.Marshal(ops)
	claimedPod, err := pods.Patch(ctx, objectName(id), types.JSONPatchType, patch, opts)
	if err != nil {
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: its Secret records the claim, but its pod could not take it (remove the sandbox): %w", id, apiErr(err))
	}
	info := infoFromPod(claimedPod)
	p.log.Info("pooled sandbox claimed", "sandbox_id", id, "pool", spec.Pool, "pod_uid", info.ContainerID,
		"duration_ms", time.Since(start).Milliseconds())
	return info, nil
}

// claimOps is the JSON patch of a claim: tests that the object is
// sandbox id of this instance, made for pool and unowned, then the
// claimant's labels and annotations from want (meta of its spec).
func claimOps(id, pool string, cfg Config, want metav1.ObjectMeta) []map[string]any {
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/labels/" + pointer(LabelManaged), "value": "true"},
		{"op": "test", "path": "/metadata/labels/" + pointer(LabelInstance), "value": cfg.Instance},
		{"op": "test", "path": "/metadata/annotations/" + pointer(AnnotationSandbox), "value": id},
		{"op": "test", "path": "/metadata/annotations/" + pointer(AnnotationPool), "value": pool},
		{"op": "test", "path": "/metadata/annotations/" + pointer(AnnotationOwner), "value": ""},
	}
	for key, value := range want.Labels {
		if key != LabelManaged && key != LabelInstance {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + pointer(key), "value": value})
		}
	}
	for key, value := range want.Annotations {
		switch key {
		case AnnotationSandbox, AnnotationPool, AnnotationImage:
			// Tested above, or the pool's image, which the claim keeps.
		default:
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + pointer(key), "value": value})
		}
	}
	return ops
}

// claimedDeadline is the activeDeadlineSeconds that ends pod at expires,
// counted from its creation as Pod counts it, but never above the one it
// has: the API server refuses to raise it.
func claimedDeadline(pod *corev1.Pod, expires time.Time) int64 {
	created := parseTime(pod.Annotations[AnnotationCreatedAt])
	n := max(1, int64(math.Ceil(expires.Sub(created).Seconds())))
	if cur := pod.Spec.ActiveDeadlineSeconds; cur != nil && *cur < n {
		return *cur
	}
	return n
}

// removeUnclaimedTries bounds how often RemoveUnclaimed reads the Secret
// again after a write (a recorded use, most likely) came between its
// read and its delete.
const removeUnclaimedTries = 3

// RemoveUnclaimed removes pooled sandbox id as Remove does, if it is
// still unowned: its Secret is deleted at the resourceVersion it was
// read at, so a claim written in between makes the delete fail
// (ErrClaimed) instead of removing the claimant's sandbox.
func (p *Provider) RemoveUnclaimed(ctx context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("remove pooled sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	secrets := p.cs.CoreV1().Secrets(p.cfg.Namespace)
	for try := 1; ; try++ {
		s, err := secrets.Get(ctx, objectName(id), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || err == nil && !ours(s.ObjectMeta, p.cfg):
			return fmt.Errorf("remove pooled sandbox %s: %w", id, sandbox.ErrNotFound)
		case err != nil:
			return fmt.Errorf("remove pooled sandbox %s: get secret: %w", id, apiErr(err))
		case s.Annotations[AnnotationPool] == "" || s.Annotations[AnnotationOwner] != "":
			return fmt.Errorf("remove pooled sandbox %s: %w", id, sandbox.ErrClaimed)
		}
		err = secrets.Delete(ctx, s.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion},
			PropagationPolicy: ptr(metav1.DeletePropagationBackground),
		})
		switch {
		case apierrors.IsConflict(err) && try < removeUnclaimedTries:
			continue // changed since the read: read it again
		case apierrors.IsConflict(err):
			return fmt.Errorf("remove pooled sandbox %s: its record kept changing; left for a later try: %w", id, apiErr(err))
		case apierrors.IsNotFound(err):
			return fmt.Errorf("remove pooled sandbox %s: %w", id, sandbox.ErrNotFound)
		case err != nil:
			return fmt.Errorf("remove pooled sandbox %s: delete secret: %w", id, apiErr(err))
		}
		p.forgetWrites(id)
		if _, err := p.deletePod(ctx, id, true); err != nil {
			return fmt.Errorf("remove pooled sandbox %s: %w", id, err)
		}
		if err := p.deleteClaim(ctx, id); err != nil {
			return fmt.Errorf("remove pooled sandbox %s: %w", id, err)
		}
		p.log.Info("unclaimed pooled sandbox removed", "sandbox_id", id)
		return nil
	}
}
