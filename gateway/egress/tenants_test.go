package egress_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress"
)

func TestParseTenants(t *testing.T) {
	t.Parallel()
	tn, err := egress.ParseTenants([]byte(`{"default": {"allow": ["pypi.org:443", "*.pythonhosted.org:443"]},
		"tenants": {"acme": {"allow": ["github.com", "*.github.com"], "sandbox_default": ["github.com"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := tn.For("nobody"); !slices.Equal(got.Ceiling.Strings(), []string{"pypi.org:443", "*.pythonhosted.org:443"}) || !slices.Equal(got.Default.Strings(), got.Ceiling.Strings()) {
		t.Errorf("deployment policy %+v", got)
	}
	if got := tn.For("acme"); !slices.Equal(got.Ceiling.Strings(), []string{"github.com", "*.github.com"}) || !slices.Equal(got.Default.Strings(), []string{"github.com"}) {
		t.Errorf("acme's policy %+v", got)
	}
	if got := (egress.Tenants{}).For("x"); len(got.Ceiling) != 0 || len(got.Default) != 0 {
		t.Errorf("zero Tenants allow %+v", got)
	}
	bad := map[string]string{
		`{"default": {"alow": ["a.com"]}}`:                                               "unknown field",
		`{"tenants": {"x": {"allow": ["10.0.0.0/8"]}}}`:                                  "always refused",
		`{"tenants": {"x": {"allow": ["a.example"], "sandbox_default": ["b.example"]}}}`: "b.example is not allowed",
		`[1]`: "want",
	}
	for in, want := range bad {
		if _, err := egress.ParseTenants([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTenants(%s) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestAllowsAny(t *testing.T) {
	t.Parallel()
	none := egress.Tenants{}
	p, err := egress.NewTenantPolicy([]string{"example.com"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if none.AllowsAny() || !(egress.Tenants{Deployment: p}).AllowsAny() || !(egress.Tenants{ByTenant: map[string]egress.TenantPolicy{"a": p}}).AllowsAny() {
		t.Error("AllowsAny: want false only when no ceiling allows anything")
	}
}
