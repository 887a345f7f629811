package kubernetes

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// dialTimeout bounds one TCP connect to a runner. On the pod network a
// live runner answers in well under a millisecond.
const dialTimeout = 5 * time.Second

// handle is one sandbox of a Provider: one pod, by UID. It holds no
// resources; Get can make a new one at any time.
type handle struct {
	p    *Provider
	info sandbox.Info
	uid  types.UID
}

var _ sandbox.Sandbox = (*handle)(nil)

// handle makes the handle of a live pod.
func (p *Provider) handle(pod *corev1.Pod) *handle {
	info := infoFromPod(pod)
	info.WorkspaceDurable = p.cfg.durable()
	return &handle{p: p, info: info, uid: pod.UID}
}

// ID returns the sandbox id.
func (h *handle) ID() string { return h.info.ID }

// Info describes the sandbox as it was when the handle was made.
func (h *handle) Info() sandbox.Info { return h.info }

// Dial opens a new connection to the runner and sends its secret. It
// first asks the API server whether the handle's pod still runs: a pod
// that is gone, terminating or replaced is ErrNotFound at once, rather
// than a connect that hangs on an address nobody holds any more, or one
// that reaches whichever pod holds it now (whose runner would refuse this
// sandbox's secret).
func (h *handle) Dial(ctx context.Context) (net.Conn, error) {
	pod, err := h.p.cs.CoreV1().Pods(h.p.cfg.Namespace).Get(ctx, objectName(h.info.ID), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("dial runner of sandbox %s: pod is gone: %w", h.info.ID, sandbox.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("dial runner of sandbox %s: %w", h.info.ID, apiErr(err))
	case pod.UID != h.uid:
		return nil, fmt.Errorf("dial runner of sandbox %s: pod was replaced: %w", h.info.ID, sandbox.ErrNotFound)
	}
	if st := state(pod); dead(st) {
		return nil, fmt.Errorf("dial runner of sandbox %s: pod is %s: %w", h.info.ID, st, sandbox.ErrNotFound)
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("dial runner of sandbox %s: pod has no IP yet", h.info.ID)
	}
	conn, err := dialRunner(ctx, pod.Status.PodIP, RunnerSecret(h.p.cfg.Key, h.info.ID))
	if err != nil {
		return nil, fmt.Errorf("dial runner of sandbox %s: %w", h.info.ID, err)
	}
	return conn, nil
}

// Destroy removes the sandbox; see Provider.Remove.
func (h *handle) Destroy(ctx context.Context) error {
	return h.p.Remove(ctx, h.info.ID)
}

// dialRunner connects to the runner on ip and sends the secret preamble.
func dialRunner(ctx context.Context, ip string, secret []byte) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(RunnerPort)))
	if err != nil {
		return nil, err
	}
	if err := protocol.WriteSecret(conn, secret); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send runner secret: %w", err)
	}
	return conn, nil
}
