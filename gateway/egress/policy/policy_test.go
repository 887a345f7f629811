package policy_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"Example.COM.":           "example.com",
		"example.com:443":        "example.com:443",
		"example.com:*":          "example.com",
		"example.com:8000-8100":  "example.com:8000-8100",
		"*.Example.com":          "*.example.com",
		"*.pythonhosted.org:443": "*.pythonhosted.org:443",
		"8.8.8.8":                "8.8.8.8",
		"8.8.8.8/32:53":          "8.8.8.8:53",
		"140.82.112.0/20":        "140.82.112.0/20",
		"2606:4700::/32":         "2606:4700::/32",
		"[2606:4700::/32]:443":   "[2606:4700::/32]:443",
		"[2606:4700::1111]:443":  "[2606:4700::1111]:443",
		"2606:4700::1111":        "2606:4700::1111",
		"BÜCHER.example":         "xn--bcher-kva.example",
	}
	for in, want := range good {
		r, err := policy.ParseRule(in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", in, err)
			continue
		}
		if r.String() != want {
			t.Errorf("ParseRule(%q).String() = %q, want %q", in, r.String(), want)
		}
		if again, err := policy.ParseRule(r.String()); err != nil || again != r {
			t.Errorf("round trip of %q: %+v, %v", in, again, err)
		}
	}
	bad := map[string]string{
		"":                   "empty",
		"*":                  "want host",
		"*.":                 "wildcard",
		"*.com":              "too broad",
		"a.*.example.com":    "whole first label",
		"example.com:0":      "bad port",
		"example.com:70000":  "bad port",
		"example.com:90-80":  "bad port",
		"10.0.0.1/8":         "did you mean 10.0.0.0/8",
		"10.0.0.0/8":         "always refused",
		"127.1":              "always refused",
		"169.254.169.254":    "always refused",
		"[::1]:22":           "always refused",
		"0.0.0.0/0":          "always refused",
		"[2606:4700::/32":    "unclosed",
		"exa mple.com":       "not allowed in a host name",
		"2130706433:80":      "always refused",
		"example.com:443:80": "not a valid IPv6",
	}
	for in, hint := range bad {
		r, err := policy.ParseRule(in)
		if err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", in, r)
			continue
		}
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("ParseRule(%q) error %q lacks %q", in, err, hint)
		}
	}
}

func rules(t *testing.T, list ...string) policy.Rules {
	t.Helper()
	rs, err := policy.ParseRules(list)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestMatch(t *testing.T) {
	t.Parallel()
	rs := rules(t, "example.com:443", "*.pythonhosted.org", "140.82.112.0/20:22", "[2606:4700::/32]:443")
	names := []struct {
		name string
		port uint16
		want string
	}{
		{"example.com", 443, "example.com:443"},
		{"example.com", 80, ""},
		{"www.example.com", 443, ""},
		{"files.pythonhosted.org", 443, "*.pythonhosted.org"},
		{"a.b.pythonhosted.org", 8080, "*.pythonhosted.org"},
		{"pythonhosted.org", 443, ""},
		{"evilpythonhosted.org", 443, ""},
	}
	for _, tc := range names {
		r, ok := rs.MatchName(tc.name, tc.port)
		if got := map[bool]string{true: r.String(), false: ""}[ok]; got != tc.want {
			t.Errorf("MatchName(%s, %d) = %q, want %q", tc.name, tc.port, got, tc.want)
		}
	}
	addrs := []struct {
		ip   string
		port uint16
		want bool
	}{
		{"140.82.113.4", 22, true}, {"140.82.113.4", 443, false}, {"140.82.128.1", 22, false},
		{"2606:4700::1111", 443, true}, {"2606:4701::1", 443, false},
	}
	for _, tc := range addrs {
		if _, ok := rs.MatchAddr(netip.MustParseAddr(tc.ip), tc.port); ok != tc.want {
			t.Errorf("MatchAddr(%s, %d) = %v, want %v", tc.ip, tc.port, ok, tc.want)
		}
	}
	if !rs.HasAddrRules(22) || rs.HasAddrRules(80) {
		t.Error("HasAddrRules: want true for 22, false for 80")
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	ceiling := rules(t, "github.com", "*.github.com", "*.pythonhosted.org:443", "140.82.112.0/20:1-1024")
	within := [][]string{
		nil,
		{"github.com"}, {"github.com:443"}, {"api.github.com"}, {"*.github.com:443"}, {"*.api.github.com"},
		{"files.pythonhosted.org:443"}, {"140.82.113.0/24:22"}, {"140.82.113.4:443"},
	}
	for _, list := range within {
		if err := rules(t, list...).Within(ceiling); err != nil {
			t.Errorf("%v within the ceiling: %v", list, err)
		}
	}
	beyond := [][]string{
		{"gitlab.com"}, {"*.com.example"}, {"files.pythonhosted.org"}, {"files.pythonhosted.org:80"},
		{"pythonhosted.org:443"}, {"140.82.0.0/16:22"}, {"140.82.113.4:2000"}, {"github.com", "evil.example"},
	}
	for _, list := range beyond {
		err := rules(t, list...).Within(ceiling)
		if err == nil || !strings.Contains(err.Error(), "github.com, *.github.com") {
			t.Errorf("%v beyond the ceiling: %v, want an error listing what is allowed", list, err)
		}
	}
	if err := rules(t, "github.com").Within(nil); err == nil || !strings.Contains(err.Error(), "allows no network access") {
		t.Errorf("within an empty ceiling: %v", err)
	}
}
