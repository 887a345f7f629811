package policy_test

import (
	"testing"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com:443", "*.example.com", "140.82.112.0/20:1-1024", "[2606:4700::/32]:443", "8.8.8.8", "BÜCHER.example:*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := policy.ParseRule(s)
		if err != nil {
			return
		}
		again, err := policy.ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %+v; its String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		if err := (policy.Rules{r}).Within(policy.Rules{r}); err != nil {
			t.Fatalf("rule %s is not within itself: %v", r, err)
		}
	})
}
