package policy_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	anyPort := policy.AnyPort
	tests := []struct {
		in, canon string
		want      policy.Rule
	}{
		{"example.com", "example.com", policy.Rule{Host: "example.com", Ports: anyPort}},
		{"Example.COM.", "example.com", policy.Rule{Host: "example.com", Ports: anyPort}},
		{"  example.com  ", "example.com", policy.Rule{Host: "example.com", Ports: anyPort}},
		{"example.com:443", "example.com:443", policy.Rule{Host: "example.com", Ports: policy.Ports{443, 443}}},
		{"example.com:*", "example.com", policy.Rule{Host: "example.com", Ports: anyPort}},
		{"example.com:1-65535", "example.com", policy.Rule{Host: "example.com", Ports: anyPort}},
		{"example.com:8000-8100", "example.com:8000-8100", policy.Rule{Host: "example.com", Ports: policy.Ports{8000, 8100}}},
		{"example.com:0443", "example.com:443", policy.Rule{Host: "example.com", Ports: policy.Ports{443, 443}}},
		{"BÜCHER.example", "xn--bcher-kva.example", policy.Rule{Host: "xn--bcher-kva.example", Ports: anyPort}},
		{"*.Example.com", "*.example.com", policy.Rule{Suffix: "example.com", Ports: anyPort}},
		{"*.pythonhosted.org:443", "*.pythonhosted.org:443", policy.Rule{Suffix: "pythonhosted.org", Ports: policy.Ports{443, 443}}},
		{"*.co.uk.", "*.co.uk", policy.Rule{Suffix: "co.uk", Ports: anyPort}},
		{"8.8.8.8", "8.8.8.8", policy.Rule{Prefix: netip.MustParsePrefix("8.8.8.8/32"), Ports: anyPort}},
		{"8.8.8.8/32:53", "8.8.8.8:53", policy.Rule{Prefix: netip.MustParsePrefix("8.8.8.8/32"), Ports: policy.Ports{53, 53}}},
		{"134744072", "8.8.8.8", policy.Rule{Prefix: netip.MustParsePrefix("8.8.8.8/32"), Ports: anyPort}},
		{"0x8.0x8.8.010:53", "8.8.8.8:53", policy.Rule{Prefix: netip.MustParsePrefix("8.8.8.8/32"), Ports: policy.Ports{53, 53}}},
		{"140.82.112.0/20", "140.82.112.0/20", policy.Rule{Prefix: netip.MustParsePrefix("140.82.112.0/20"), Ports: anyPort}},
		{"2606:4700::/32", "2606:4700::/32", policy.Rule{Prefix: netip.MustParsePrefix("2606:4700::/32"), Ports: anyPort}},
		{"[2606:4700::/32]:443", "[2606:4700::/32]:443", policy.Rule{Prefix: netip.MustParsePrefix("2606:4700::/32"), Ports: policy.Ports{443, 443}}},
		{"[2606:4700::1111]:443", "[2606:4700::1111]:443", policy.Rule{Prefix: netip.MustParsePrefix("2606:4700::1111/128"), Ports: policy.Ports{443, 443}}},
		{"[2606:4700::1111]", "2606:4700::1111", policy.Rule{Prefix: netip.MustParsePrefix("2606:4700::1111/128"), Ports: anyPort}},
		{"2606:4700:0::1111", "2606:4700::1111", policy.Rule{Prefix: netip.MustParsePrefix("2606:4700::1111/128"), Ports: anyPort}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			r, err := policy.ParseRule(tc.in)
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tc.in, err)
			}
			if r != tc.want {
				t.Errorf("ParseRule(%q) = %+v, want %+v", tc.in, r, tc.want)
			}
			if r.String() != tc.canon {
				t.Errorf("ParseRule(%q).String() = %q, want %q", tc.in, r.String(), tc.canon)
			}
			if again, err := policy.ParseRule(r.String()); err != nil || again != r {
				t.Errorf("ParseRule(%q) = %+v, %v; want %+v", r.String(), again, err, r)
			}
		})
	}
}

func TestParseRuleRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, hint string }{
		{"", "empty"},
		{"   ", "empty"},
		{"*", "want host"},
		{"*.", "wildcard"},
		{"*.*.example.com", "no other \"*\""},
		{"*example.com", "whole first label"},
		{"a.*.example.com", "whole first label"},
		{"example.*", "whole first label"},
		{"*.com", "too broad"},
		{"*.com.", "too broad"},
		{"*.8.8.8.8", "not an address"},
		{"*.example.123", "IPv4"},
		{"example.com:", "bad port"},
		{"example.com:0", "bad port"},
		{"example.com:70000", "bad port"},
		{"example.com:90-80", "bad port"},
		{"example.com:80-", "bad port"},
		{"example.com:http", "bad port"},
		{"example.com:443:80", "not a valid IPv6"},
		{"10.0.0.1/8", "did you mean 10.0.0.0/8"},
		{"2606:4700::1/32", "did you mean 2606:4700::/32"},
		{"10.0.0.0/33", "bad CIDR"},
		{"10.0.0.0/8", "always refused"},
		{"127.1", "always refused"},
		{"2130706433:80", "always refused"},
		{"169.254.169.254", "always refused"},
		{"172.16.0.0/12:443", "always refused"},
		{"[::1]:22", "always refused"},
		{"[::ffff:8.8.8.8]:53", "IPv4-mapped"},
		{"0.0.0.0/0", "always refused"},
		{"::/0", "always refused"},
		{"8.0.0.0/6", "10.0.0.0/8"},
		{"[2606:4700::/32", "unclosed"},
		{"[2606:4700::/32]443", "after ]"},
		{"[example.com]:443", "only for IPv6"},
		{"[8.8.8.8]:53", "only for IPv6"},
		{"fe80::1%eth0", "zone"},
		{"exa mple.com", "not allowed in a host name"},
		{"1.2.3.4.5", "IPv4"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			r, err := policy.ParseRule(tc.in)
			if err == nil {
				t.Fatalf("ParseRule(%q) = %+v, want an error", tc.in, r)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("ParseRule(%q) error %q lacks %q", tc.in, err, tc.hint)
			}
		})
	}
}

func TestParseRules(t *testing.T) {
	t.Parallel()
	rs, err := policy.ParseRules([]string{"Example.com:443", "*.github.com", "[2606:4700::/32]:443"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com:443", "*.github.com", "[2606:4700::/32]:443"}
	if got := rs.Strings(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Strings() = %q, want %q", got, want)
	}
	_, err = policy.ParseRules([]string{"example.com", "exa mple.com:443", "10.0.0.0/8"})
	if err == nil || !strings.Contains(err.Error(), `"exa mple.com:443"`) || !strings.Contains(err.Error(), "*.suffix") {
		t.Errorf("ParseRules error %v: want it to name the bad entry and the syntax", err)
	}
	if rs, err := policy.ParseRules(nil); err != nil || rs != nil {
		t.Errorf("ParseRules(nil) = %v, %v", rs, err)
	}
}
