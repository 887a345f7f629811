package kubernetes

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandgate/sandgate/sandbox"
)

// pullFailures are the kubelet's waiting reasons for an image it does not
// have and cannot (or may not) pull.
var pullFailures = map[string]bool{
	"ErrImageNeverPull": true, // imagePullPolicy Never and not on the node
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"InvalidImageName":  true,
}

// startFailures are waiting reasons that no amount of waiting mends.
var startFailures = map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"CrashLoopBackOff":           true, // not with restartPolicy Never; kept for safety
}

// verdict is what a starting pod's status says.
type verdict struct {
	ip    string // the pod's IP, once it has one: dial the runner there
	state string // what the pod is doing, for a timeout's message
	err   error  // the pod cannot start; nil while it still may
}

// classify reads a starting pod's status. The runner is dialled as soon
// as the pod has an IP; the status only says when to give up.
func classify(pod *corev1.Pod, cfg Config) verdict {
	if pod.DeletionTimestamp != nil {
		return verdict{err: fmt.Errorf("%w: pod %s is being deleted", sandbox.ErrStartFailed, pod.Name)}
	}
	for _, c := range pod.Status.InitContainerStatuses {
		if err := containerFailure(c, true, cfg); err != nil {
			return verdict{err: err}
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		if err := containerFailure(c, false, cfg); err != nil {
			return verdict{err: err}
		}
	}
	if ph := pod.Status.Phase; ph == corev1.PodFailed || ph == corev1.PodSucceeded {
		return verdict{err: fmt.Errorf("%w: pod %s is %s: %s", sandbox.ErrStartFailed, pod.Name, ph,
			orNone(strings.TrimSpace(pod.Status.Reason+" "+pod.Status.Message)))}
	}
	return verdict{ip: pod.Status.PodIP, state: describe(pod)}
}

// containerFailure reports why container status c means the pod cannot
// start, or nil. The init container's image is the runner image.
func containerFailure(c corev1.ContainerStatus, init bool, cfg Config) error {
	if w := c.State.Waiting; w != nil && pullFailures[w.Reason] {
		return imageFailure(init, c.Image, w.Reason, w.Message, cfg)
	}
	if w := c.State.Waiting; w != nil && startFailures[w.Reason] {
		return fmt.Errorf("%w: container %s: %s: %s", sandbox.ErrStartFailed, c.Name, w.Reason, w.Message)
	}
	t := c.State.Terminated
	switch {
	case t == nil, init && t.ExitCode == 0:
		return nil
	case init:
		return fmt.Errorf("%w: installing the runner from %s failed (exit code %d, %s): %s",
			sandbox.ErrStartFailed, cfg.RunnerImage, t.ExitCode, t.Reason, orNone(t.Message))
	}
	return fmt.Errorf("%w: runner exited before it answered (exit code %d, %s): %s",
		sandbox.ErrStartFailed, t.ExitCode, t.Reason, orNone(t.Message))
}

// eventFailure reports the kubelet's event e about a starting pod as the
// image error it stands for, or nil.
func eventFailure(e *corev1.Event, pod *corev1.Pod, cfg Config) error {
	pull := e.Reason == "ErrImageNeverPull" || e.Reason == "InspectFailed" ||
		e.Reason == "Failed" && strings.HasPrefix(e.Message, "Failed to pull image")
	if e.Type != corev1.EventTypeWarning || !pull || len(pod.Spec.Containers) == 0 {
		return nil
	}
	init := strings.HasPrefix(e.InvolvedObject.FieldPath, "spec.initContainers")
	return imageFailure(init, pod.Spec.Containers[0].Image, e.Reason, e.Message, cfg)
}

// imageFailure is the error for an image the kubelet cannot get: the
// runner image for the init container, else the sandbox's image.
func imageFailure(init bool, image, reason, message string, cfg Config) error {
	if init {
		return fmt.Errorf("%w: runner image %s is not on the node and the kubelet cannot pull it (%s: %s); %s",
			sandbox.ErrRunnerMissing, cfg.RunnerImage, reason, message, loadHint(cfg.RunnerImage))
	}
	return fmt.Errorf("%w: image %s is not on the node and the kubelet cannot pull it (%s: %s); %s",
		sandbox.ErrImageMissing, image, reason, message, loadHint(image))
}

// loadHint says how to get image onto the nodes.
func loadHint(image string) string {
	return fmt.Sprintf("build it (make images) and load it into the cluster (local test cluster: deploy/kubernetes/local/load-image.sh %s), or push it to a registry the nodes can pull from", image)
}

// describe says what a pod that has not started yet is waiting for.
func describe(pod *corev1.Pod) string {
	parts := []string{"pod is " + string(pod.Status.Phase)}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			parts = append(parts, fmt.Sprintf("not scheduled (%s: %s)", c.Reason, c.Message))
		}
	}
	for _, cs := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, c := range cs {
			if w := c.State.Waiting; w != nil {
				parts = append(parts, fmt.Sprintf("container %s waiting (%s)", c.Name, strings.TrimSpace(w.Reason+" "+w.Message)))
			}
		}
	}
	if pod.Status.PodIP == "" {
		parts = append(parts, "no pod IP yet")
	}
	return strings.Join(parts, ", ")
}

// orNone returns s, or "no message" for an empty s.
func orNone(s string) string {
	if s == "" {
		return "no message"
	}
	return s
}
