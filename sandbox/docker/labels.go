package docker

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/sandgate/sandgate/sandbox"
)

// Container labels. They are the provider's only state: Get, List and
// Remove, and a restarted gateway, rebuild everything from them. Operators
// can use them too: docker ps --filter label=sandgate.managed=true.
const (
	// LabelManaged is "true" on every container a sandgate gateway made.
	LabelManaged = "sandgate.managed"
	// LabelInstance is Config.Instance of the gateway that made it.
	LabelInstance = "sandgate.instance"
	// LabelSandbox is the sandbox id.
	LabelSandbox = "sandgate.sandbox"
	// LabelSession is the owning MCP session id, if any.
	LabelSession = "sandgate.session"
	// LabelClient is Spec.Client: the client whose default sandbox it is.
	LabelClient = "sandgate.client"
	// LabelOwner is the opaque owner digest from the Spec.
	LabelOwner = "sandgate.owner"
	// LabelCreatedAt is the creation time, RFC 3339 in UTC.
	LabelCreatedAt = "sandgate.created-at"
	// LabelExpiresAt is when the sandbox must be gone, RFC 3339 in UTC.
	LabelExpiresAt = "sandgate.expires-at"
	// LabelTenant is the owner's tenant.
	LabelTenant = "sandgate.tenant"
	// LabelNetwork is the egress allowlist the sandbox was created (or
	// last replaced) with, rules joined by commas; rules hold no commas.
	LabelNetwork = "sandgate.network"
	// LabelPool is Spec.Pool: the container was made for the warm pool.
	LabelPool = "sandgate.pool"
	// LabelTemplate is Spec.Template, if any.
	LabelTemplate = "sandgate.template"
	// LabelMetadata is Spec.Metadata as a JSON object (absent: none).
	LabelMetadata = "sandgate.metadata"
	// LabelLifecycle is Spec.Lifecycle's String (absent: the default).
	LabelLifecycle = "sandgate.lifecycle"
)

// labels returns the labels of a new sandbox created at now. spec.ID and
// spec.ExpiresAt must be set (ContainerConfig sets the expiry).
func labels(spec sandbox.Spec, instance string, now time.Time) map[string]string {
	l := map[string]string{
		LabelManaged:   "true",
		LabelInstance:  instance,
		LabelSandbox:   spec.ID,
		LabelSession:   spec.Session,
		LabelOwner:     spec.Owner,
		LabelClient:    spec.Client,
		LabelTenant:    spec.Tenant,
		LabelNetwork:   strings.Join(spec.Network, ","),
		LabelCreatedAt: now.UTC().Format(time.RFC3339Nano),
		LabelExpiresAt: spec.ExpiresAt.UTC().Format(time.RFC3339Nano),
		LabelPool:      spec.Pool,
		LabelTemplate:  spec.Template,
	}
	if lc := spec.Lifecycle.String(); lc != "" {
		l[LabelLifecycle] = lc
	}
	if len(spec.Metadata) > 0 {
		metadata, _ := json.Marshal(spec.Metadata) // map[string]string always encodes
		l[LabelMetadata] = string(metadata)
	}
	return l
}

// scope returns the label filter that selects this instance's sandboxes.
func (p *Provider) scope() filters.Args {
	return filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelInstance+"="+p.cfg.Instance),
	)
}

// infoFromSummary rebuilds a sandbox's Info from its container's labels.
// Unparsable times stay zero rather than failing the listing: one damaged
// container must not hide the others from reconciliation.
func infoFromSummary(c container.Summary) sandbox.Info {
	return sandbox.Info{
		ID:          c.Labels[LabelSandbox],
		ContainerID: c.ID,
		Image:       c.Image,
		Owner:       c.Labels[LabelOwner],
		Session:     c.Labels[LabelSession],
		Client:      c.Labels[LabelClient],
		Tenant:      c.Labels[LabelTenant],
		Network:     splitList(c.Labels[LabelNetwork]),
		Pool:        c.Labels[LabelPool],
		CreatedAt:   parseTime(c.Labels[LabelCreatedAt]),
		ExpiresAt:   parseTime(c.Labels[LabelExpiresAt]),
		State:       c.State,
		Template:    c.Labels[LabelTemplate],
		Metadata:    parseMetadata(c.Labels[LabelMetadata]),
		Lifecycle:   sandbox.ParseLifecycle(c.Labels[LabelLifecycle]),
	}
}

// parseMetadata parses LabelMetadata; invalid or empty gives nil.
func parseMetadata(s string) map[string]string {
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil || len(m) == 0 {
		return nil
	}
	return m
}

// parseTime parses an RFC 3339 label value; invalid or empty gives zero.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// splitList splits a comma-joined label value; empty gives nil.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
