package kubernetes

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// Defaults for the zero fields of Config.
const (
	// DefaultImage is the sandbox image images/build.sh builds.
	DefaultImage = "sandgate/base:latest"
	// DefaultRunnerImage holds the static runner at /runner; its
	// `install DEST` subcommand copies it to DEST.
	DefaultRunnerImage = "sandgate/runner:latest"
	// DefaultUser is the sandbox user of sandgate images, as for Docker.
	DefaultUser = "1000:1000"
	// DefaultInstance scopes a gateway that was given no instance name.
	DefaultInstance = "default"
	// MinKeyBytes is the shortest Config.Key accepted: the runner secrets
	// are derived from it, so it must be a key, not a password.
	MinKeyBytes = 32
)

// DefaultGatewaySelector is the pod label of gateway pods that the
// NetworkPolicy admits to the runners.
var DefaultGatewaySelector = map[string]string{"app.kubernetes.io/name": "sandgate-gateway"}

// Default requests: what an idle sandbox costs (an idle runner is about
// 15 MiB resident and uses no CPU), so the scheduler packs many idle
// sandboxes on a node. The limits come from sandbox.Limits.
var (
	DefaultCPURequest    = resource.MustParse("25m")
	DefaultMemoryRequest = resource.MustParse("64Mi")
)

// Config says where and how the provider creates sandbox pods.
type Config struct {
	// RESTConfig reaches the API server (required). New copies it.
	RESTConfig *rest.Config
	// Namespace holds the sandbox pods, their Secrets and the
	// NetworkPolicy (required). It must exist.
	Namespace string
	// Image is used when a Spec names none (default DefaultImage).
	Image string
	// RunnerImage is the image the init container copies the runner
	// from (default DefaultRunnerImage).
	RunnerImage string
	// RuntimeClass is the pods' runtimeClassName: "" is the cluster's
	// default runtime, "gvisor" (runsc) or "kata" a stronger boundary.
	RuntimeClass string
	// User is the numeric "uid:gid" every process in a sandbox runs as
	// (default DefaultUser). Names are refused, and so is root.
	User string
	// Instance scopes this deployment's sandboxes (label
	// sandgate.dev/instance): Get, List and Remove never see another
	// instance's, and the NetworkPolicy selects only its own.
	Instance string
	// Key derives each sandbox's runner secret as an HMAC of its id; all
	// gateway replicas of an instance must share it. At least
	// MinKeyBytes bytes.
	Key []byte
	// GatewaySelector is the pod labels of the gateway pods admitted to
	// the runners' port (default DefaultGatewaySelector).
	GatewaySelector map[string]string
	// GatewayNamespace is the namespace of the gateway pods, when it is
	// not Namespace.
	GatewayNamespace string
	// ImagePullPolicy of both images (default IfNotPresent).
	ImagePullPolicy corev1.PullPolicy
	// CPURequest and MemoryRequest are each sandbox's requests (defaults
	// DefaultCPURequest and DefaultMemoryRequest); a request above the
	// sandbox's limit is cut to the limit.
	CPURequest, MemoryRequest resource.Quantity
	// IsolationProbe is a HOST:PORT the sandboxes' NetworkPolicy forbids,
	// which each runner waits to see blocked before it serves (default:
	// the API server's address from RESTConfig; "-" for none).
	IsolationProbe string
	// WorkspaceClass is the StorageClass of each sandbox's /workspace, a
	// PersistentVolumeClaim of the sandbox's workspace size that outlives
	// its pods (pod loss, Recreate, pause) and goes with its Secret. ""
	// is the cluster's default class. The class must enforce the claim's
	// size, so that a full workspace is ENOSPC for the writer: block
	// storage with a file system on it (TopoLVM, a cloud disk, the local
	// cluster's csi-workspace), not a directory provisioner. It must
	// allow ReadWriteOncePod, so that two pods never write one workspace.
	// WorkspaceEmptyDir keeps /workspace in an emptyDir instead, which
	// dies with its pod and whose size is enforced by eviction.
	WorkspaceClass string
	// Logger receives operator logs (default: discarded).
	Logger *slog.Logger
}

// WorkspaceEmptyDir as Config.WorkspaceClass puts /workspace in an
// emptyDir (no StorageClass name has capitals).
const WorkspaceEmptyDir = "emptyDir"

// durable reports whether /workspace is a PersistentVolumeClaim.
func (c Config) durable() bool { return c.WorkspaceClass != WorkspaceEmptyDir }

// idPattern bounds sandbox ids: at most 64 characters that make a valid
// DNS-1123 name after the "sandgate-" prefix (object names), so lowercase
// letters, digits and inner dashes only. The gateway's ids (32 hex
// characters) match.
var idPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)

// userPattern is a numeric uid:gid.
var userPattern = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.RunnerImage == "" {
		c.RunnerImage = DefaultRunnerImage
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if len(c.GatewaySelector) == 0 {
		c.GatewaySelector = maps.Clone(DefaultGatewaySelector)
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if c.CPURequest.IsZero() {
		c.CPURequest = DefaultCPURequest.DeepCopy()
	}
	if c.MemoryRequest.IsZero() {
		c.MemoryRequest = DefaultMemoryRequest.DeepCopy()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.IsolationProbe == "-":
		c.IsolationProbe = ""
	case c.IsolationProbe == "" && c.RESTConfig != nil:
		c.IsolationProbe = apiServerAddr(c.RESTConfig.Host)
	}
	return c
}

// apiServerAddr is the HOST:PORT of an API server URL (or bare host), or
// "" when it has none a pod could dial.
func apiServerAddr(host string) string {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// Validate checks that c, with defaults applied, can be used. It does not
// talk to the cluster; New does.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.RESTConfig == nil {
		errs = append(errs, errors.New("no REST config (kubeconfig)"))
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Label(c.GatewayNamespace); c.GatewayNamespace != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("gateway namespace %q: %s", c.GatewayNamespace, strings.Join(msgs, "; ")))
	}
	// The instance is a label value and part of the policy's name.
	if msgs := validation.IsDNS1123Label(c.Instance); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("instance %q: %s", c.Instance, strings.Join(msgs, "; ")))
	}
	if len(c.Key) < MinKeyBytes {
		errs = append(errs, fmt.Errorf("key is %d bytes, want at least %d random bytes", len(c.Key), MinKeyBytes))
	}
	if _, _, err := parseUser(c.User); err != nil {
		errs = append(errs, err)
	}
	for k, v := range c.GatewaySelector {
		if msgs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("gateway selector %s=%s: %s", k, v, strings.Join(msgs, "; ")))
		}
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("image pull policy %q: want Always, IfNotPresent or Never", c.ImagePullPolicy))
	}
	if msgs := validation.IsDNS1123Subdomain(c.WorkspaceClass); c.durable() && c.WorkspaceClass != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("workspace StorageClass %q: %s (or %q for an emptyDir)", c.WorkspaceClass, strings.Join(msgs, "; "), WorkspaceEmptyDir))
	}
	if c.CPURequest.Sign() < 0 || c.MemoryRequest.Sign() < 0 {
		errs = append(errs, errors.New("negative CPU or memory request"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kubernetes provider config: %w", err)
	}
	return nil
}

// parseUser splits a numeric "uid:gid" and refuses root's uid and gid.
func parseUser(user string) (uid, gid int64, err error) {
	if !userPattern.MatchString(user) {
		return 0, 0, fmt.Errorf("user %q must be numeric uid:gid", user)
	}
	u, g, _ := strings.Cut(user, ":")
	uid, errU := strconv.ParseInt(u, 10, 32)
	gid, errG := strconv.ParseInt(g, 10, 32)
	if errU != nil || errG != nil {
		return 0, 0, fmt.Errorf("user %q: uid or gid out of range", user)
	}
	if uid == 0 || gid == 0 {
		return 0, 0, fmt.Errorf("user %q: sandboxes never run as root or group root", user)
	}
	return uid, gid, nil
}
