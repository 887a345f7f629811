package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// TenantPolicy is what the operator lets one tenant's sandboxes reach.
type TenantPolicy struct {
	// Ceiling is the most any of the tenant's sandboxes may be allowed.
	Ceiling policy.Rules
	// Default is what a sandbox gets when its creator asks for nothing
	// (always a session's sandbox); it lies within Ceiling.
	Default policy.Rules
}

// Tenants holds the operator's egress policy: a deployment-wide
// TenantPolicy and per-tenant ones that replace it. The zero value allows
// nothing to anyone.
type Tenants struct {
	Deployment TenantPolicy
	ByTenant   map[string]TenantPolicy
}

// AllowsAny reports whether any tenant's sandboxes may reach anything.
func (t Tenants) AllowsAny() bool {
	if len(t.Deployment.Ceiling) > 0 {
		return true
	}
	for _, p := range t.ByTenant {
		if len(p.Ceiling) > 0 {
			return true
		}
	}
	return false
}

// For returns tenant's policy.
func (t Tenants) For(tenant string) TenantPolicy {
	if p, ok := t.ByTenant[tenant]; ok {
		return p
	}
	return t.Deployment
}

// policyFile is the JSON form of Tenants:
//
//	{"default": {"allow": ["pypi.org:443", "*.pythonhosted.org:443"],
//	             "sandbox_default": ["pypi.org:443"]},
//	 "tenants": {"acme": {"allow": ["github.com", "*.github.com"]}}}
//
// "allow" is the ceiling; "sandbox_default" (optional, default: all of
// "allow") is what a sandbox gets when it asks for nothing.
type policyFile struct {
	Default *filePolicy           `json:"default"`
	Tenants map[string]filePolicy `json:"tenants"`
}

type filePolicy struct {
	Allow          []string  `json:"allow"`
	SandboxDefault *[]string `json:"sandbox_default"`
}

// ParseTenants reads the JSON policy file format (see policyFile). Unknown
// fields are errors, so a misspelt key cannot silently allow nothing.
func ParseTenants(data []byte) (Tenants, error) {
	var f policyFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Tenants{}, fmt.Errorf("parse egress policy: %w (want {\"default\": {\"allow\": [...]}, \"tenants\": {\"name\": {\"allow\": [...], \"sandbox_default\": [...]}}})", err)
	}
	var t Tenants
	if f.Default != nil {
		p, err := f.Default.build()
		if err != nil {
			return Tenants{}, fmt.Errorf("egress policy, default: %w", err)
		}
		t.Deployment = p
	}
	names := make([]string, 0, len(f.Tenants))
	for name := range f.Tenants {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p, err := f.Tenants[name].build()
		if err != nil {
			return Tenants{}, fmt.Errorf("egress policy, tenant %q: %w", name, err)
		}
		if t.ByTenant == nil {
			t.ByTenant = map[string]TenantPolicy{}
		}
		t.ByTenant[name] = p
	}
	return t, nil
}

// LoadTenants reads a policy file (see ParseTenants).
func LoadTenants(path string) (Tenants, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Tenants{}, fmt.Errorf("read egress policy: %w", err)
	}
	t, err := ParseTenants(data)
	if err != nil {
		return Tenants{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// NewTenantPolicy builds a TenantPolicy from rule strings; a nil
// sandboxDefault means the whole ceiling.
func NewTenantPolicy(allow []string, sandboxDefault []string) (TenantPolicy, error) {
	fp := filePolicy{Allow: allow}
	if sandboxDefault != nil {
		fp.SandboxDefault = &sandboxDefault
	}
	return fp.build()
}

func (fp filePolicy) build() (TenantPolicy, error) {
	ceiling, err := policy.ParseRules(fp.Allow)
	if err != nil {
		return TenantPolicy{}, fmt.Errorf("allow: %w", err)
	}
	p := TenantPolicy{Ceiling: ceiling, Default: ceiling}
	if fp.SandboxDefault != nil {
		if p.Default, err = policy.ParseRules(*fp.SandboxDefault); err != nil {
			return TenantPolicy{}, fmt.Errorf("sandbox_default: %w", err)
		}
		if err := p.Default.Within(ceiling); err != nil {
			return TenantPolicy{}, fmt.Errorf("sandbox_default: %w", err)
		}
	}
	return p, nil
}
