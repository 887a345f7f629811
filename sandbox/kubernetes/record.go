package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/sandbox"
)

// The record of a sandbox is its Secret. Its data is immutable, its
// metadata is not: what gateway replicas must share after creation
// (sandbox.Recorder) is written to its annotations with a JSON patch
// that first tests the instance label, so a replica never writes to an
// object of another instance, and List reads it back from there.

var _ sandbox.Recorder = (*Provider)(nil)

// Touch records at as sandbox id's last use (AnnotationLastUsed on its
// Secret). One request; it does not wake the kubelet, which does not
// watch the Secret.
func (p *Provider) Touch(ctx context.Context, id string, at time.Time) error {
	if err := p.annotate(ctx, "secrets", id, AnnotationLastUsed, at.UTC().Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("record the use of sandbox %s: %w", id, err)
	}
	return nil
}

// SetNetwork records rules as sandbox id's egress allowlist
// (AnnotationNetwork) on its Secret, and then on its pod, so that Get,
// which reads only the pod, says the same. The Secret is the record: a
// pod that is gone, or one whose patch fails, changes nothing that List
// reports, and Recreate makes the next pod from the Secret's spec.
func (p *Provider) SetNetwork(ctx context.Context, id string, rules []string) error {
	if rules == nil {
		rules = []string{}
	}
	network, _ := json.Marshal(rules) // []string always encodes
	if err := p.annotate(ctx, "secrets", id, AnnotationNetwork, string(network)); err != nil {
		return fmt.Errorf("record the network allowlist of sandbox %s: %w", id, err)
	}
	if err := p.annotate(ctx, "pods", id, AnnotationNetwork, string(network)); err != nil && !isNotFound(err) {
		p.log.Warn("annotate a sandbox pod with its new network allowlist; its Secret has it", "sandbox_id", id, "error", err)
	}
	return nil
}

// SetDeadline records at as the end sandbox id's owner set
// (AnnotationDeadline) on its Secret; zero clears it. Recreate keeps it:
// it rewrites only the annotations a Spec says.
func (p *Provider) SetDeadline(ctx context.Context, id string, at time.Time) error {
	value := ""
	if !at.IsZero() {
		value = at.UTC().Format(time.RFC3339Nano)
	}
	if err := p.annotate(ctx, "secrets", id, AnnotationDeadline, value); err != nil {
		return fmt.Errorf("record the deadline of sandbox %s: %w", id, err)
	}
	return nil
}

// annotate sets annotations (key, value pairs, in one write) on sandbox
// id's object of the given resource ("secrets" or "pods"), if it is this
// instance's; else it returns ErrNotFound.
func (p *Provider) annotate(ctx context.Context, resource, id string, keyValues ...string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: id %q", sandbox.ErrNotFound, id)
	}
	ops := []map[string]string{
		{"op": "test", "path": "/metadata/labels/" + pointer(LabelManaged), "value": "true"},
		{"op": "test", "path": "/metadata/labels/" + pointer(LabelInstance), "value": p.cfg.Instance},
		{"op": "test", "path": "/metadata/annotations/" + pointer(AnnotationSandbox), "value": id},
	}
	for i := 0; i+1 < len(keyValues); i += 2 {
		ops = append(ops, map[string]string{"op": "add", "path": "/metadata/annotations/" + pointer(keyValues[i]), "value": keyValues[i+1]})
	}
	patch, _ := json.Marshal(ops) // strings always encode
	var err error
	opts := metav1.PatchOptions{FieldManager: "sandgate-gateway"}
	switch resource {
	case "secrets":
		_, err = p.cs.CoreV1().Secrets(p.cfg.Namespace).Patch(ctx, objectName(id), types.JSONPatchType, patch, opts)
	case "pods":
		_, err = p.cs.CoreV1().Pods(p.cfg.Namespace).Patch(ctx, objectName(id), types.JSONPatchType, patch, opts)
	default:
		return fmt.Errorf("annotate %s: unknown resource", resource)
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %s %s is gone", sandbox.ErrNotFound, resource, objectName(id))
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		// A failed test: the object is not this instance's sandbox.
		return fmt.Errorf("%w: %s %s is not this instance's sandbox (%v)", sandbox.ErrNotFound, resource, objectName(id), err)
	}
	return apiErr(err)
}

// pointer escapes a map key for a JSON pointer (RFC 6901).
func pointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func isNotFound(err error) bool { return errors.Is(err, sandbox.ErrNotFound) }
