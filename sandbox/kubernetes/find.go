package kubernetes

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/sandbox"
)

// States of a listed sandbox (Info.State) beyond the pod's phase in lower
// case ("pending", "running", "succeeded", "failed", "unknown").
const (
	// StateRunning is a pod whose runner container runs.
	StateRunning = "running"
	// StatePending is a pod that is starting: not yet scheduled, pulling,
	// installing the runner, or running but not yet reported so (the
	// kubelet reports a started container up to a second late).
	StatePending = "pending"
	// StateTerminating is a pod being deleted.
	StateTerminating = "terminating"
	// StateEvicted is a pod the kubelet evicted (e.g. its workspace
	// outgrew its size limit) or otherwise killed to free the node.
	StateEvicted = "evicted"
	// StateNoPod is a sandbox whose pod is gone (deleted or evicted and
	// removed from outside, or mid-Recreate) while its Secret remains:
	// Recreate can bring it back, Remove finishes it.
	StateNoPod = "no-pod"
)

// Get returns the sandbox id of this instance if its pod runs or is
// starting, or ErrNotFound. A pod that is terminating, failed, evicted,
// whose runner exited, or that is gone, is not found: its runner is dead
// for good; Recreate or Remove deal with it.
func (p *Provider) Get(ctx context.Context, id string) (sandbox.Sandbox, error) {
	if !idPattern.MatchString(id) {
		return nil, fmt.Errorf("get sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	pod, err := p.cs.CoreV1().Pods(p.cfg.Namespace).Get(ctx, objectName(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && !ours(pod.ObjectMeta, p.cfg):
		return nil, fmt.Errorf("get sandbox %s: %w", id, sandbox.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("get sandbox %s: %w", id, apiErr(err))
	}
	if st := state(pod); dead(st) {
		return nil, fmt.Errorf("get sandbox %s: pod is %s: %w", id, st, sandbox.ErrNotFound)
	}
	return p.handle(pod), nil
}

// List describes this instance's sandboxes that match filter, oldest
// first: one per Secret, with the state of its pod (StateNoPod without
// one) and what the Secret records (LastUsed, Network), and any pod whose
// Secret is already gone (the garbage collector
// is about to delete it). Terminating pods without a Secret are left out:
// they are removed already.
func (p *Provider) List(ctx context.Context, filter sandbox.Filter) ([]sandbox.Info, error) {
	opts := metav1.ListOptions{LabelSelector: selector(p.cfg, filter)}
	if filter.ID != "" {
		if !idPattern.MatchString(filter.ID) {
			return nil, nil
		}
		// The API server serves a name selector from one key, not a scan.
		opts.FieldSelector = "metadata.name=" + objectName(filter.ID)
	}
	if filter.RecordsOnly {
		return p.listRecords(ctx, opts, filter)
	}
	secrets, err := p.cs.CoreV1().Secrets(p.cfg.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: secrets: %w", apiErr(err))
	}
	pods, err := p.cs.CoreV1().Pods(p.cfg.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: pods: %w", apiErr(err))
	}
	byName := make(map[string]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	infos := make([]sandbox.Info, 0, len(secrets.Items))
	for _, s := range secrets.Items {
		if !ours(s.ObjectMeta, p.cfg) || !matches(s.ObjectMeta, filter) || s.DeletionTimestamp != nil {
			continue
		}
		if pod := byName[s.Name]; pod != nil && ours(pod.ObjectMeta, p.cfg) {
			delete(byName, s.Name)
			infos = append(infos, withRecord(infoFromPod(pod), s.ObjectMeta))
			continue
		}
		info := pausedInfo(s.ObjectMeta)
		if info.State == "" {
			info.State = StateNoPod
		}
		infos = append(infos, info)
	}
	for _, pod := range byName {
		if ours(pod.ObjectMeta, p.cfg) && matches(pod.ObjectMeta, filter) && pod.DeletionTimestamp == nil {
			infos = append(infos, infoFromPod(pod))
		}
	}
	p.sortAndMark(infos)
	return infos, nil
}

// pausedInfo is infoFromMeta of a sandbox's Secret, with State
// StatePaused, PausedAt and DiskBytes when the Secret is marked paused.
func pausedInfo(m metav1.ObjectMeta) sandbox.Info {
	info := infoFromMeta(m)
	if at := m.Annotations[AnnotationPausedAt]; at != "" {
		info.State, info.PausedAt = sandbox.StatePaused, parseTime(at)
		info.DiskBytes, _ = strconv.ParseInt(m.Annotations[AnnotationPausedBytes], 10, 64)
		info.PausedFor = sandbox.PauseReason(m.Annotations[AnnotationPausedFor])
	}
	return info
}

// sortAndMark orders infos by creation (then id) and says whether their
// workspaces outlive their pods.
func (p *Provider) sortAndMark(infos []sandbox.Info) {
	slices.SortFunc(infos, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	for i := range infos {
		infos[i].WorkspaceDurable = p.cfg.durable()
	}
}

// listRecords is List of the Secrets alone (Filter.RecordsOnly), with an
// empty State. With Filter.Since it reads them as of this provider's
// last write of that sandbox's Secret or later: the API server's watch
// cache answers as soon as it holds that write, instead of first waiting
// to hear from etcd that it holds every later write of the cluster too
// (a consistent list, which waited 60-90 ms here after writes to pods).
// With AnyRecent the cache answers with what it holds.
func (p *Provider) listRecords(ctx context.Context, opts metav1.ListOptions, filter sandbox.Filter) ([]sandbox.Info, error) {
	switch {
	case filter.Since == sandbox.AnyRecent:
		opts.ResourceVersion = "0" // whatever the watch cache holds
	case filter.Since != "":
		if rv := p.lastWrite(filter.Since); rv != "" {
			opts.ResourceVersion, opts.ResourceVersionMatch = rv, metav1.ResourceVersionMatchNotOlderThan
		}
	}
	secrets, err := p.cs.CoreV1().Secrets(p.cfg.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list sandbox records: %w", apiErr(err))
	}
	var infos []sandbox.Info
	for _, s := range secrets.Items {
		if ours(s.ObjectMeta, p.cfg) && matches(s.ObjectMeta, filter) && s.DeletionTimestamp == nil {
			// The record alone says paused (a pause or resume cut
			// short may have left a pod running beside the mark; List
			// says which).
			infos = append(infos, pausedInfo(s.ObjectMeta))
		}
	}
	p.sortAndMark(infos)
	return infos, nil
}

// Remove deletes the sandbox's Secret and its pod, and waits until the
// pod is gone, so that its runner no longer answers when Remove returns.
// The Secret goes first: should Remove stop half-way, the garbage
// collector deletes the pod of a Secret that is gone.
func (p *Provider) Remove(ctx context.Context, id string) error {
	start := time.Now()
	if !idPattern.MatchString(id) {
		return fmt.Errorf("remove sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	found := false
	secret, err := p.cs.CoreV1().Secrets(p.cfg.Namespace).Get(ctx, objectName(id), metav1.GetOptions{})
	switch {
	case err == nil && ours(secret.ObjectMeta, p.cfg):
		if err := p.deleteSecret(ctx, secret); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
		found = true
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("remove sandbox %s: get secret: %w", id, apiErr(err))
	}
	p.forgetWrites(id)
	deleted, err := p.deletePod(ctx, id, true)
	if err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	if err := p.deleteClaim(ctx, id); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	if !found && !deleted {
		return fmt.Errorf("remove sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	p.log.Info("sandbox removed", "sandbox_id", id, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// deletePod deletes the pod of sandbox id, if it is this instance's, and
// with wait returns only once it is gone (or a new pod has taken its
// name). It reports whether it deleted a pod that was not terminating
// already.
//
// The delete is graceful, never forced: a pod stays in the API, and so
// under the NetworkPolicy, until the kubelet has killed its containers.
// A forced delete would drop the pod from the API at once, and the
// network plugin would stop applying the policy to an address whose
// processes may still run.
func (p *Provider) deletePod(ctx context.Context, id string, wait bool) (bool, error) {
	pods := p.cs.CoreV1().Pods(p.cfg.Namespace)
	pod, err := pods.Get(ctx, objectName(id), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get pod: %w", apiErr(err))
	case !ours(pod.ObjectMeta, p.cfg):
		return false, fmt.Errorf("pod %s is not this instance's sandbox; not deleting it", pod.Name)
	}
	deleted := pod.DeletionTimestamp == nil
	if deleted {
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &pod.UID},
			PropagationPolicy: ptr(metav1.DeletePropagationBackground),
		})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err): // gone, or replaced, meanwhile
			return false, nil
		case err != nil:
			return false, fmt.Errorf("delete pod: %w", apiErr(err))
		}
	}
	if wait {
		if err := p.waitGone(ctx, pod); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// deleteSecret deletes s, if it is still the same object.
func (p *Provider) deleteSecret(ctx context.Context, s *corev1.Secret) error {
	err := p.cs.CoreV1().Secrets(p.cfg.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &s.UID},
		PropagationPolicy: ptr(metav1.DeletePropagationBackground),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete secret: %w", apiErr(err))
	}
	return nil
}

// infoFromPod rebuilds a sandbox's Info from its pod.
func infoFromPod(pod *corev1.Pod) sandbox.Info {
	info := infoFromMeta(pod.ObjectMeta)
	info.ContainerID = string(pod.UID)
	info.State = state(pod)
	return info
}

// state is the word for pod's state in Info.State: StateRunning only when
// it is not being deleted, its phase is Running, it has an IP and its
// runner container runs.
func state(pod *corev1.Pod) string {
	switch {
	case pod.DeletionTimestamp != nil:
		return StateTerminating
	case evicted(pod):
		return StateEvicted
	case pod.Status.Phase != corev1.PodRunning:
		return cmp.Or(strings.ToLower(string(pod.Status.Phase)), StatePending)
	case pod.Status.PodIP == "":
		return StatePending
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == ContainerName && c.State.Running == nil {
			return "exited"
		}
	}
	return StateRunning
}

// evicted reports whether the kubelet evicted pod. Its phase may then be
// Succeeded, not Failed: the runner exits cleanly on SIGTERM.
func evicted(pod *corev1.Pod) bool {
	if pod.Status.Reason == "Evicted" {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "TerminationByKubelet" {
			return true
		}
	}
	return false
}

// dead reports whether a pod in state st will never serve again: it is
// neither running nor starting.
func dead(st string) bool { return st != StateRunning && st != StatePending }
