package policy_test

import (
	"net/netip"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

func rules(t *testing.T, list ...string) policy.Rules {
	t.Helper()
	rs, err := policy.ParseRules(list)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestMatchName(t *testing.T) {
	t.Parallel()
	rs := rules(t, "example.com:443", "*.pythonhosted.org", "API.GitHub.com:22-443", "140.82.112.0/20:22")
	tests := []struct {
		name string
		port uint16
		want string // the matching rule, or "" for none
	}{
		{"example.com", 443, "example.com:443"},
		{"example.com", 80, ""},
		{"example.com", 0, ""},
		{"Example.com", 443, ""}, // not normalised: matches nothing
		{"example.com.", 443, ""},
		{"www.example.com", 443, ""},
		{"files.pythonhosted.org", 443, "*.pythonhosted.org"},
		{"a.b.pythonhosted.org", 65535, "*.pythonhosted.org"},
		{"pythonhosted.org", 443, ""}, // the apex is not a subdomain
		{"evilpythonhosted.org", 443, ""},
		{"pythonhosted.org.evil.example", 443, ""},
		{"api.github.com", 22, "api.github.com:22-443"},
		{"api.github.com", 443, "api.github.com:22-443"},
		{"api.github.com", 444, ""},
		{"api.github.com", 21, ""},
		{"140.82.113.4", 22, ""}, // addresses are MatchAddr's
		{"", 443, ""},
	}
	for _, tc := range tests {
		r, ok := rs.MatchName(tc.name, tc.port)
		if got := map[bool]string{true: r.String(), false: ""}[ok]; got != tc.want {
			t.Errorf("MatchName(%q, %d) = %q, want %q", tc.name, tc.port, got, tc.want)
		}
	}
}

func TestMatchAddr(t *testing.T) {
	t.Parallel()
	rs := rules(t, "example.com", "140.82.112.0/20:22", "[2606:4700::/32]:443", "8.8.8.8:53", "2606:4700:4700::1111")
	tests := []struct {
		ip   string
		port uint16
		want string
	}{
		{"140.82.112.0", 22, "140.82.112.0/20:22"},
		{"140.82.127.255", 22, "140.82.112.0/20:22"},
		{"140.82.113.4", 443, ""},
		{"140.82.128.1", 22, ""},
		{"140.82.111.255", 22, ""},
		{"8.8.8.8", 53, "8.8.8.8:53"},
		{"8.8.8.8", 443, ""},
		{"8.8.4.4", 53, ""},
		{"::ffff:8.8.8.8", 53, ""}, // a mapped form is not the IPv4 address
		{"2606:4700::1111", 443, "[2606:4700::/32]:443"},
		{"2606:4700:4700::1111", 80, "2606:4700:4700::1111"},
		{"2606:4701::1", 443, ""},
		{"2606:4700::1%eth0", 443, ""},
	}
	for _, tc := range tests {
		r, ok := rs.MatchAddr(netip.MustParseAddr(tc.ip), tc.port)
		if got := map[bool]string{true: r.String(), false: ""}[ok]; got != tc.want {
			t.Errorf("MatchAddr(%s, %d) = %q, want %q", tc.ip, tc.port, got, tc.want)
		}
	}
	for port, want := range map[uint16]bool{22: true, 53: true, 443: true, 80: true} {
		if got := rs.HasAddrRules(port); got != want {
			t.Errorf("HasAddrRules(%d) = %v, want %v", port, got, want)
		}
	}
	v4 := rules(t, "example.com", "140.82.112.0/20:22")
	if !v4.HasAddrRules(22) || v4.HasAddrRules(80) {
		t.Error("HasAddrRules: want true for 22, false for 80")
	}
	if (policy.Rules{}).HasAddrRules(22) {
		t.Error("empty rules have address rules")
	}
}
