package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandgate/sandgate/sandbox"
)

// Labels and annotations of every sandbox pod and Secret. They are the
// provider's only state: Get, List, Remove and a restarted (or second)
// gateway rebuild sandbox.Info from them. A label value is at most 63
// characters of a restricted alphabet, so only what a selector must match
// is a label; everything else, the full owner and session included, is an
// annotation. Owner and session are selected through a hash label and
// then checked against the annotation, so neither their length nor their
// characters matter, and a hash collision cannot match the wrong owner.
const (
	// LabelManaged is "true" on every object a sandgate gateway made.
	LabelManaged = "sandgate.dev/managed"
	// LabelInstance is Config.Instance.
	LabelInstance = "sandgate.dev/instance"
	// LabelOwnerHash is labelHash of the owner digest (absent for none).
	LabelOwnerHash = "sandgate.dev/owner-hash"
	// LabelSessionHash is labelHash of the MCP session id (absent for none).
	LabelSessionHash = "sandgate.dev/session-hash"
	// LabelClientHash is labelHash of Spec.Client (absent for none), so
	// any replica finds a client's default sandbox with one selector.
	LabelClientHash = "sandgate.dev/client-hash"
	// LabelTenantHash is labelHash of the tenant (absent for none), so a
	// gateway replica counts a tenant's sandboxes with one selector.
	LabelTenantHash = "sandgate.dev/tenant-hash"

	// AnnotationSandbox is the sandbox id (up to 64 characters, one more
	// than a label value may have; the object names hold it too).
	AnnotationSandbox = "sandgate.dev/sandbox"
	// AnnotationOwner is the opaque owner digest from the Spec.
	AnnotationOwner = "sandgate.dev/owner"
	// AnnotationSession is the owning MCP session id, if any.
	AnnotationSession = "sandgate.dev/session"
	// AnnotationClient is Spec.Client, if any.
	AnnotationClient = "sandgate.dev/client"
	// AnnotationTenant is the owner's tenant.
	AnnotationTenant = "sandgate.dev/tenant"
	// AnnotationNetwork is the egress allowlist, a JSON array of rules.
	AnnotationNetwork = "sandgate.dev/network"
	// AnnotationCreatedAt is when this pod was made, RFC 3339 in UTC.
	AnnotationCreatedAt = "sandgate.dev/created-at"
	// AnnotationExpiresAt is when the sandbox must be gone, RFC 3339 in UTC.
	AnnotationExpiresAt = "sandgate.dev/expires-at"
	// AnnotationPool is Spec.Pool: the sandbox was made for the warm pool.
	AnnotationPool = "sandgate.dev/pool"
	// AnnotationImage is the sandbox image as the Spec named it.
	AnnotationImage = "sandgate.dev/image"
	// AnnotationLastUsed is the last use a gateway recorded (Touch),
	// RFC 3339 in UTC; on the Secret only, absent until the first.
	AnnotationLastUsed = "sandgate.dev/last-used"
	// AnnotationTemplate is Spec.Template, if any.
	AnnotationTemplate = "sandgate.dev/template"
	// AnnotationMetadata is Spec.Metadata, a JSON object (absent: none).
	// The gateway bounds it far below the 256 KiB annotations may hold.
	AnnotationMetadata = "sandgate.dev/metadata"
	// AnnotationDeadline is the end the owner set (SetDeadline), RFC
	// 3339 in UTC; on the Secret only, absent or empty for none.
	AnnotationDeadline = "sandgate.dev/deadline"
	// AnnotationLifecycle is Spec.Lifecycle's String (absent or empty:
	// the default).
	AnnotationLifecycle = "sandgate.dev/lifecycle"
	// AnnotationLimits is Spec.Limits as JSON, so that Resume can make
	// the pod a paused sandbox had.
	AnnotationLimits = "sandgate.dev/limits"
	// AnnotationPausedAt marks a paused sandbox's Secret (Pause), RFC
	// 3339 in UTC; on the Secret only. With a pod beside it, it means
	// nothing (a pause or resume cut short): the sandbox runs.
	AnnotationPausedAt = "sandgate.dev/paused-at"
	// AnnotationPausedBytes is the provisioned size of a paused
	// sandbox's workspace volume, in bytes, when it was paused.
	AnnotationPausedBytes = "sandgate.dev/paused-bytes"
	// AnnotationPausedFor is a paused sandbox's Secret's pause reason
	// (sandbox.Info.PausedFor).
	AnnotationPausedFor = "sandgate.dev/paused-for"
	// AnnotationResumedAt is the sandbox's last resume, RFC 3339 in UTC.
	AnnotationResumedAt = "sandgate.dev/resumed-at"
)

// namePrefix starts the name of every sandbox pod and Secret.
const namePrefix = "sandgate-"

// objectName is the name of sandbox id's pod and of its Secret: at most
// 73 characters, a valid DNS-1123 subdomain for ids that match idPattern.
// The pod's hostname is set apart ("sandbox"), so the 63-character limit
// of hostnames does not apply to it.
func objectName(id string) string { return namePrefix + id }

// labelHash maps any string to a label value: 128 bits of its SHA-256 in
// hex.
func labelHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// meta returns the name, labels and annotations of sandbox spec's objects
// made at now. spec.ID, Image and ExpiresAt must be set.
func meta(spec sandbox.Spec, cfg Config, now time.Time) metav1.ObjectMeta {
	l := scopeLabels(cfg)
	if spec.Owner != "" {
		l[LabelOwnerHash] = labelHash(spec.Owner)
	}
	if spec.Session != "" {
		l[LabelSessionHash] = labelHash(spec.Session)
	}
	if spec.Client != "" {
		l[LabelClientHash] = labelHash(spec.Client)
	}
	if spec.Tenant != "" {
		l[LabelTenantHash] = labelHash(spec.Tenant)
	}
	network, _ := json.Marshal(spec.Network) // []string always encodes
	if spec.Network == nil {
		network = []byte("[]")
	}
	a := map[string]string{
		AnnotationSandbox:   spec.ID,
		AnnotationOwner:     spec.Owner,
		AnnotationSession:   spec.Session,
		AnnotationClient:    spec.Client,
		AnnotationTenant:    spec.Tenant,
		AnnotationNetwork:   string(network),
		AnnotationCreatedAt: now.UTC().Format(time.RFC3339Nano),
		AnnotationExpiresAt: spec.ExpiresAt.UTC().Format(time.RFC3339Nano),
		AnnotationPool:      spec.Pool,
		AnnotationImage:     spec.Image,
		AnnotationTemplate:  spec.Template,
		AnnotationLifecycle: spec.Lifecycle.String(),
	}
	if len(spec.Metadata) > 0 {
		metadata, _ := json.Marshal(spec.Metadata) // map[string]string always encodes
		a[AnnotationMetadata] = string(metadata)
	}
	if spec.Limits != (sandbox.Limits{}) {
		limits, _ := json.Marshal(spec.Limits) // numbers and durations always encode
		a[AnnotationLimits] = string(limits)
	}
	return metav1.ObjectMeta{Name: objectName(spec.ID), Namespace: cfg.Namespace, Labels: l, Annotations: a}
}

// scopeLabels are the labels that select this instance's objects.
func scopeLabels(cfg Config) map[string]string {
	return map[string]string{LabelManaged: "true", LabelInstance: cfg.Instance}
}

// selector selects this instance's objects that may match filter; matches
// then checks the annotations.
func selector(cfg Config, filter sandbox.Filter) string {
	l := scopeLabels(cfg)
	if filter.Owner != "" {
		l[LabelOwnerHash] = labelHash(filter.Owner)
	}
	if filter.Session != "" {
		l[LabelSessionHash] = labelHash(filter.Session)
	}
	if filter.Client != "" {
		l[LabelClientHash] = labelHash(filter.Client)
	}
	if filter.Tenant != "" {
		l[LabelTenantHash] = labelHash(filter.Tenant)
	}
	return labels.SelectorFromSet(l).String()
}

// ours reports whether m is a sandbox object of this instance.
func ours(m metav1.ObjectMeta, cfg Config) bool {
	return m.Labels[LabelManaged] == "true" && m.Labels[LabelInstance] == cfg.Instance &&
		m.Annotations[AnnotationSandbox] != "" && m.Name == objectName(m.Annotations[AnnotationSandbox])
}

// matches reports whether the object m carries the id, owner, session,
// client and tenant of filter (empty fields match anything).
func matches(m metav1.ObjectMeta, filter sandbox.Filter) bool {
	a := m.Annotations
	return (filter.ID == "" || a[AnnotationSandbox] == filter.ID) &&
		(filter.Owner == "" || a[AnnotationOwner] == filter.Owner) &&
		(filter.Session == "" || a[AnnotationSession] == filter.Session) &&
		(filter.Client == "" || a[AnnotationClient] == filter.Client) &&
		(filter.Tenant == "" || a[AnnotationTenant] == filter.Tenant)
}

// infoFromMeta rebuilds a sandbox's Info from its object's annotations.
// Unparsable values stay zero rather than failing: one damaged object must
// not hide the others from reconciliation. State is left to the caller.
func infoFromMeta(m metav1.ObjectMeta) sandbox.Info {
	a := m.Annotations
	var network []string
	if err := json.Unmarshal([]byte(a[AnnotationNetwork]), &network); err != nil || len(network) == 0 {
		network = nil
	}
	var metadata map[string]string
	if err := json.Unmarshal([]byte(a[AnnotationMetadata]), &metadata); err != nil || len(metadata) == 0 {
		metadata = nil
	}
	return sandbox.Info{
		ID:        a[AnnotationSandbox],
		Image:     a[AnnotationImage],
		Owner:     a[AnnotationOwner],
		Session:   a[AnnotationSession],
		Client:    a[AnnotationClient],
		Tenant:    a[AnnotationTenant],
		Network:   network,
		Pool:      a[AnnotationPool],
		CreatedAt: parseTime(a[AnnotationCreatedAt]),
		ExpiresAt: parseTime(a[AnnotationExpiresAt]),
		LastUsed:  parseTime(a[AnnotationLastUsed]),
		Deadline:  parseTime(a[AnnotationDeadline]),
		Template:  a[AnnotationTemplate],
		Metadata:  metadata,
		Lifecycle: sandbox.ParseLifecycle(a[AnnotationLifecycle]),
		ResumedAt: parseTime(a[AnnotationResumedAt]),
	}
}

// specFromRecord rebuilds the Spec a sandbox was made with from its
// Secret's annotations (Resume makes its pod again from it).
func specFromRecord(m metav1.ObjectMeta) sandbox.Spec {
	info := infoFromMeta(m)
	var limits sandbox.Limits
	_ = json.Unmarshal([]byte(m.Annotations[AnnotationLimits]), &limits) // absent or damaged: the defaults
	return sandbox.Spec{ID: info.ID, Image: info.Image, Owner: info.Owner, Session: info.Session, Client: info.Client,
		Tenant: info.Tenant, Network: info.Network, Limits: limits, ExpiresAt: info.ExpiresAt, Pool: info.Pool,
		Template: info.Template, Metadata: info.Metadata, Lifecycle: info.Lifecycle}
}

// withRecord returns the sandbox as its Secret, the record, describes
// it, with the state and container id of its pod, info. The Secret has
// everything the pod has, and what was recorded since the pod was made:
// the last use, the allowlist last set, the owner's deadline (see
// record.go) and a pool claim whose pod patch was cut short (claim.go).
func withRecord(info sandbox.Info, secret metav1.ObjectMeta) sandbox.Info {
	rec := infoFromMeta(secret)
	rec.ContainerID, rec.State = info.ContainerID, info.State
	// A pause mark beside a live pod: a pause cut short (or under way).
	rec.PausedAt = parseTime(secret.Annotations[AnnotationPausedAt])
	return rec
}

// parseTime parses an RFC 3339 value; invalid or empty gives zero.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
