package policy_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

func TestWithin(t *testing.T) {
	t.Parallel()
	ceiling := rules(t, "github.com", "*.github.com", "*.pythonhosted.org:443", "140.82.112.0/20:1-1024", "[2606:4700::/32]:443")
	within := [][]string{
		nil,
		{"github.com"}, {"github.com:443"}, {"github.com:1-65535"},
		{"api.github.com"}, {"a.b.github.com:22"}, {"*.github.com:443"}, {"*.api.github.com"},
		{"files.pythonhosted.org:443"}, {"*.files.pythonhosted.org:443"},
		{"140.82.112.0/20:22"}, {"140.82.113.0/24:22"}, {"140.82.113.4:443"}, {"140.82.113.4:1-1024"},
		{"[2606:4700::1111]:443"}, {"[2606:4700:1::/48]:443"},
		{"github.com", "api.github.com:443", "140.82.113.4:22"},
	}
	for _, list := range within {
		if err := rules(t, list...).Within(ceiling); err != nil {
			t.Errorf("%q within the ceiling: %v", list, err)
		}
	}
	beyond := []struct {
		list  []string
		first string // the rule the error names
	}{
		{[]string{"gitlab.com"}, "gitlab.com"},
		{[]string{"evilgithub.com"}, "evilgithub.com"},
		{[]string{"*.com.example"}, "*.com.example"},
		{[]string{"pythonhosted.org:443"}, "pythonhosted.org:443"},           // apex of a wildcard
		{[]string{"files.pythonhosted.org"}, "files.pythonhosted.org"},       // any port beyond 443
		{[]string{"files.pythonhosted.org:80"}, "files.pythonhosted.org:80"}, // another port
		{[]string{"*.pythonhosted.org:443-444"}, "*.pythonhosted.org:443-444"},
		{[]string{"140.82.0.0/16:22"}, "140.82.0.0/16:22"}, // a superset
		{[]string{"140.82.113.4:2000"}, "140.82.113.4:2000"},
		{[]string{"140.82.113.4"}, "140.82.113.4"},
		{[]string{"[2606:4700::/31]:443"}, "[2606:4700::/31]:443"},
		{[]string{"2606:4700::1111"}, "2606:4700::1111"},
		{[]string{"github.com", "evil.example"}, "evil.example"},
	}
	for _, tc := range beyond {
		err := rules(t, tc.list...).Within(ceiling)
		if err == nil {
			t.Errorf("%q within the ceiling, want refused", tc.list)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tc.first+" is not allowed") || !strings.Contains(msg, "github.com, *.github.com, *.pythonhosted.org:443") {
			t.Errorf("%q: error %q should name %s and list what the ceiling allows", tc.list, msg, tc.first)
		}
	}
}

func TestWithinKinds(t *testing.T) {
	t.Parallel()
	// Names are never covered by address rules, nor addresses by names.
	if err := rules(t, "example.com").Within(rules(t, "93.184.216.0/24")); err == nil {
		t.Error("a name rule was covered by an address rule")
	}
	if err := rules(t, "93.184.216.34").Within(rules(t, "example.com", "*.example.com")); err == nil {
		t.Error("an address rule was covered by name rules")
	}
	// A wildcard never covers its apex, nor a Host rule a wildcard.
	if err := rules(t, "*.example.com").Within(rules(t, "example.com", "www.example.com")); err == nil {
		t.Error("a wildcard was covered by host rules")
	}
	if err := rules(t, "8.8.8.8").Within(rules(t, "2606:4700::/32")); err == nil {
		t.Error("an IPv4 rule was covered by an IPv6 rule")
	}
}

func TestWithinEmptyCeiling(t *testing.T) {
	t.Parallel()
	for _, ceiling := range []policy.Rules{nil, {}} {
		err := rules(t, "github.com").Within(ceiling)
		if err == nil || !strings.Contains(err.Error(), "allows no network access") {
			t.Errorf("within an empty ceiling: %v", err)
		}
		if err := policy.Rules(nil).Within(ceiling); err != nil {
			t.Errorf("no rules within an empty ceiling: %v", err)
		}
	}
}
