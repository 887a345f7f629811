package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/sandbox"
)

const (
	// pingTimeout bounds New's check that the API server answers.
	pingTimeout = 10 * time.Second
	// Client-side rate limits. client-go's defaults (5/s, burst 10) would
	// make a gateway that starts a few sandboxes at once wait on itself:
	// a Create is three requests and a watch.
	defaultQPS   = 50
	defaultBurst = 100
)

// Provider creates sandboxes as pods of one namespace of a Kubernetes
// cluster. It is safe for concurrent use, and several Providers (gateway
// replicas) may share an instance: everything they know is in the
// cluster.
type Provider struct {
	cs  clientset.Interface
	cfg Config
	log *slog.Logger

	// written holds the resourceVersion of each sandbox's Secret as this
	// provider last created, recreated or claimed it, for List's
	// Filter.Since, which follows such a write at once; entries older
	// than writtenTTL are dropped.
	writtenMu sync.Mutex
	written   map[string]writeMark
}

// writeMark is a Secret's resourceVersion after a write, and when.
type writeMark struct {
	rv string
	at time.Time
}

// writtenTTL is how long wrote remembers a write. Filter.Since is for
// the read that follows a creation or claim, within its call.
const writtenTTL = 5 * time.Minute

// wrote records that this provider wrote s, a sandbox's Secret.
func (p *Provider) wrote(s *corev1.Secret) {
	if s == nil || s.ResourceVersion == "" {
		return
	}
	now := time.Now()
	p.writtenMu.Lock()
	defer p.writtenMu.Unlock()
	p.written[s.Name] = writeMark{rv: s.ResourceVersion, at: now}
	if len(p.written) > 64 {
		for name, w := range p.written {
			if now.Sub(w.at) > writtenTTL {
				delete(p.written, name)
			}
		}
	}
}

// lastWrite returns the resourceVersion of sandbox id's Secret as this
// provider last wrote it (within writtenTTL), or "".
func (p *Provider) lastWrite(id string) string {
	p.writtenMu.Lock()
	defer p.writtenMu.Unlock()
	if w, ok := p.written[objectName(id)]; ok && time.Since(w.at) <= writtenTTL {
		return w.rv
	}
	return ""
}

// forgetWrites drops what wrote recorded of sandbox id.
func (p *Provider) forgetWrites(id string) {
	p.writtenMu.Lock()
	defer p.writtenMu.Unlock()
	delete(p.written, objectName(id))
}

var _ sandbox.Provider = (*Provider)(nil)

// New checks cfg, connects to the API server and makes sure the
// instance's NetworkPolicy is in place (creating or updating it), so no
// sandbox pod ever runs without it. The namespace must exist.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg.RESTConfig)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = defaultQPS, defaultBurst
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "sandgate-gateway"
	}
	cs, err := clientset.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: configure kubernetes client: %v", sandbox.ErrUnavailable, err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(pingCtx).Error(); err != nil {
		return nil, fmt.Errorf("%w: reach the Kubernetes API server at %s: %v (check the kubeconfig)",
			sandbox.ErrUnavailable, rc.Host, err)
	}
	p := &Provider{cs: cs, cfg: cfg, log: cfg.Logger.With("provider", "kubernetes", "namespace", cfg.Namespace, "instance", cfg.Instance),
		written: map[string]writeMark{}}
	if err := p.ensurePolicy(ctx); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("kubernetes provider: namespace %s does not exist (create it first): %w", cfg.Namespace, err)
		}
		return nil, err
	}
	return p, nil
}

// WorkspaceDurable reports whether /workspace outlives the sandbox's
// pods: a PersistentVolumeClaim does; an emptyDir (WorkspaceEmptyDir)
// dies with its pod.
func (p *Provider) WorkspaceDurable() bool { return p.cfg.durable() }

// Close releases nothing: the provider holds no connection or lock of its
// own. Sandboxes keep running; a later gateway of the instance finds them.
func (p *Provider) Close() error { return nil }

// newID returns 128 random bits in hex. crypto/rand.Read never fails.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// apiErr marks errors that mean the API server could not be reached (or
// answered that it cannot serve) with sandbox.ErrUnavailable. The caller's
// own cancellation or deadline is not the cluster's fault and stays as is.
func apiErr(err error) error {
	if err == nil || errors.Is(err, sandbox.ErrUnavailable) {
		return err
	}
	if unreachable(err) {
		return fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	return err
}

// unreachable reports whether err is a transport failure or an API server
// that says it is unavailable or timed out.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return false // the server answered
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}
