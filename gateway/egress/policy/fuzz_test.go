package policy_test

import (
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/guard"
	"github.com/sandgate/sandgate/gateway/egress/policy"
)

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com:443", "*.example.com", "140.82.112.0/20:1-1024", "[2606:4700::/32]:443",
		"8.8.8.8", "BÜCHER.example:*", "134744072:53", "*.com", "10.0.0.1/8", "[2606:4700::1111]", "a.*.b", "x:0"} {
		f.Add(s)
	}
	g := guard.New(nil)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := policy.ParseRule(s)
		if err != nil {
			return
		}
		again, err := policy.ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %+v; its String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		set := 0
		for _, b := range []bool{r.Host != "", r.Suffix != "", r.Prefix.IsValid()} {
			if b {
				set++
			}
		}
		if set != 1 || r.Ports.Lo == 0 || r.Ports.Lo > r.Ports.Hi {
			t.Fatalf("ParseRule(%q) = %+v: want exactly one destination and ports 1-65535", s, r)
		}
		if r.Prefix.IsValid() {
			if err := g.Check(r.Prefix.Addr()); err != nil {
				t.Fatalf("ParseRule(%q) = %+v, whose first address guard refuses: %v", s, r, err)
			}
		}
		if err := (policy.Rules{r}).Within(policy.Rules{r}); err != nil {
			t.Fatalf("rule %s is not within itself: %v", r, err)
		}
	})
}
