package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/sandgate/sandgate/sandbox"
)

const (
	// readyTimeout caps the wait for a new pod's runner whatever the
	// caller's deadline. A pod on a warm node answers in seconds; this
	// leaves room for a busy node and an image pull (IfNotPresent).
	readyTimeout = 2 * time.Minute
	// readyPoll is how often Create dials the runner once the pod has an
	// IP. The kubelet reports a running container up to a second late
	// (its relist period), so Create does not wait for that report; a
	// refused dial on the pod network costs well under a millisecond.
	readyPoll = 20 * time.Millisecond
	// goneTimeout caps the wait for a deleted pod to disappear: the
	// grace period, the kubelet's kill and its report.
	goneTimeout = 90 * time.Second
)

// waitReady watches pod until its runner answers a dial, and returns the
// pod as last seen. It fails early, with ErrImageMissing,
// ErrRunnerMissing or ErrStartFailed, when the kubelet reports that the
// pod cannot start, and with ErrStartFailed after readyTimeout. The
// caller's cancellation is returned as is.
func (p *Provider) waitReady(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	waitCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	pods, err := watchtools.NewRetryWatcherWithContext(waitCtx, pod.ResourceVersion,
		podWatcher{p.cs.CoreV1().Pods(p.cfg.Namespace), pod.Name})
	if err != nil {
		return nil, fmt.Errorf("watch pod %s: %w", pod.Name, err)
	}
	defer pods.Stop()
	podEvents, kubeletEvents := pods.ResultChan(), p.kubeletEvents(waitCtx, pod)
	answered := make(chan struct{})
	dialing := false
	secret := RunnerSecret(p.cfg.Key, pod.Annotations[AnnotationSandbox])
	for {
		v := classify(pod, p.cfg)
		if v.err != nil {
			return nil, v.err
		}
		if v.ip != "" && !dialing {
			dialing = true
			go dialUntil(waitCtx, v.ip, secret, answered)
		}
		select {
		case <-answered:
			return pod, nil
		case ev, ok := <-podEvents:
			if !ok {
				podEvents = nil // the deadline, below
				if waitCtx.Err() == nil {
					return nil, fmt.Errorf("watch pod %s: the watch ended", pod.Name)
				}
				continue
			}
			if pod, err = nextPod(pod, ev); err != nil {
				return nil, err
			}
		case ev, ok := <-kubeletEvents:
			if !ok {
				kubeletEvents = nil
			} else if e, isEvent := ev.Object.(*corev1.Event); isEvent {
				if err := eventFailure(e, pod, p.cfg); err != nil {
					return nil, err
				}
			}
		case <-waitCtx.Done():
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("wait for runner: %w", err)
			}
			return nil, fmt.Errorf("%w: runner did not answer within %v; %s", sandbox.ErrStartFailed, readyTimeout, v.state)
		}
	}
}

// nextPod returns the pod as a watch event shows it, or why it will not
// start.
func nextPod(pod *corev1.Pod, ev watch.Event) (*corev1.Pod, error) {
	switch ev.Type {
	case watch.Added, watch.Modified:
		if np, ok := ev.Object.(*corev1.Pod); ok && np.UID == pod.UID {
			return np, nil
		}
	case watch.Deleted:
		return nil, fmt.Errorf("%w: pod %s was deleted while it started", sandbox.ErrStartFailed, pod.Name)
	case watch.Error:
		return nil, fmt.Errorf("watch pod %s: %w", pod.Name, apiErr(apierrors.FromObject(ev.Object)))
	}
	return pod, nil
}

// kubeletEvents watches the events about pod. The kubelet reports an
// image it cannot pull there at once, while the pod's status says so only
// at its next sync, about ten seconds later. They are a hint: without
// them (no permission to watch events, a watch that ends) Create still
// learns everything from the status, later. A nil channel never delivers.
func (p *Provider) kubeletEvents(ctx context.Context, pod *corev1.Pod) <-chan watch.Event {
	w, err := p.cs.CoreV1().Events(p.cfg.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		p.log.Debug("watch the events of a starting pod; image errors will show later", "pod", pod.Name, "error", err)
		return nil
	}
	go func() {
		<-ctx.Done()
		w.Stop()
	}()
	return w.ResultChan()
}

// dialUntil dials the runner at ip every readyPoll until a dial succeeds,
// then closes answered. It stops when ctx ends.
func dialUntil(ctx context.Context, ip string, secret []byte, answered chan<- struct{}) {
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		conn, err := dialRunner(ctx, ip, secret)
		if err == nil {
			conn.Close()
			close(answered)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitGone returns once pod (by UID) no longer exists.
func (p *Provider) waitGone(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, goneTimeout)
	defer cancel()
	pods := p.cs.CoreV1().Pods(p.cfg.Namespace)
	// Watch from the version read before the delete, so the deletion
	// cannot slip by between the delete and the watch.
	events, err := watchtools.NewRetryWatcherWithContext(ctx, pod.ResourceVersion, podWatcher{pods, pod.Name})
	if err == nil {
		defer events.Stop()
		_, err = watchtools.UntilWithoutRetry(ctx, events, func(ev watch.Event) (bool, error) {
			if ev.Type == watch.Error {
				return false, apierrors.FromObject(ev.Object)
			}
			np, ok := ev.Object.(*corev1.Pod)
			return ok && (ev.Type == watch.Deleted || np.UID != pod.UID), nil
		})
	}
	if err == nil {
		return nil
	}
	// The watch may have failed (an expired resource version, say) after
	// the pod went: the pod itself is the answer.
	cur, gerr := pods.Get(context.WithoutCancel(ctx), pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(gerr) || gerr == nil && cur.UID != pod.UID {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) {
		return fmt.Errorf("pod %s is still terminating after %v", pod.Name, goneTimeout)
	}
	return fmt.Errorf("wait for pod %s to go: %w", pod.Name, apiErr(err))
}

// podWatcher watches the one pod called name.
type podWatcher struct {
	pods corev1client.PodInterface
	name string
}

func (w podWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.name).String()
	return w.pods.Watch(ctx, opts)
}
