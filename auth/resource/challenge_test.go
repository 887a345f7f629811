package resource_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth/resource"
)

type params = map[string]string

func TestParseChallenges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   []resource.Challenge
	}{
		{``, nil},
		{`Bearer`, []resource.Challenge{{"Bearer", params{}}}},
		{`Bearer resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`,
			[]resource.Challenge{{"Bearer", params{"resource_metadata": "https://gw.example/.well-known/oauth-protected-resource/mcp"}}}},
		{`Bearer error="invalid_token", error_description="a \"quoted\" \\ word", Scope="a b"`,
			[]resource.Challenge{{"Bearer", params{"error": "invalid_token", "error_description": `a "quoted" \ word`, "scope": "a b"}}}},
		{`Basic realm="x", Bearer realm=y , error = invalid_token`,
			[]resource.Challenge{{"Basic", params{"realm": "x"}}, {"Bearer", params{"realm": "y", "error": "invalid_token"}}}},
		{`Negotiate abc==, Basic realm="a,b"`,
			[]resource.Challenge{{"Negotiate", params{"": "abc=="}}, {"Basic", params{"realm": "a,b"}}}},
		{`Basic, Bearer`, []resource.Challenge{{"Basic", params{}}, {"Bearer", params{}}}},
		{` , Bearer a=b,, ,c=d ,`, []resource.Challenge{{"Bearer", params{"a": "b", "c": "d"}}}},
		{`Bearer a=""`, []resource.Challenge{{"Bearer", params{"a": ""}}}},
	}
	for _, tc := range tests {
		got, err := resource.ParseChallenges(tc.header)
		if err != nil {
			t.Errorf("ParseChallenges(%q): %v", tc.header, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseChallenges(%q) = %#v, want %#v", tc.header, got, tc.want)
		}
	}
}

func TestParseChallengesErrors(t *testing.T) {
	t.Parallel()
	for _, h := range []string{
		`Bearer a="unterminated`,
		`Bearer a="bad \` + "\x01" + ` escape"`,
		`Bearer a=b c=d`,
		`Bearer a=b, a=c`,
		`Bearer a=` + "\"x\x00\"",
		`Bearer a=b, c=`,
		`"Bearer"`,
		`Bearer="x"`,
		`Negotiate abc, realm=x`,
	} {
		if got, err := resource.ParseChallenges(h); err == nil {
			t.Errorf("ParseChallenges(%q) = %v, want an error", h, got)
		}
	}
}

func TestChallengeString(t *testing.T) {
	t.Parallel()
	c := resource.Challenge{Scheme: "Bearer", Params: params{
		"resource_metadata": "https://gw/x", "error": "invalid_token", "error_description": "say \"hi\"\r\nX-Injected: 1", "z": "1",
	}}
	got := c.String()
	want := `Bearer error="invalid_token", error_description="say \"hi\"  X-Injected: 1", resource_metadata="https://gw/x", z="1"`
	if got != want {
		t.Fatalf("String() =\n%s\nwant\n%s", got, want)
	}
}

func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp", scope="a b"`,
		`Bearer error="insufficient_scope", error_description="needs \"x\"", scope="x"`,
		`Basic realm="a", Negotiate abc==, Bearer`,
		`, ,Bearer a=b,,c="d\\e"`,
		`Bearer a="`, `x=`, `Negotiate a=`, "Bearer a=\"\xff\t\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		cs, err := resource.ParseChallenges(header)
		if err != nil {
			return
		}
		rendered := make([]string, len(cs))
		for i, c := range cs {
			if c.Scheme == "" {
				t.Fatalf("empty scheme from %q", header)
			}
			rendered[i] = c.String()
		}
		joined := strings.Join(rendered, ", ")
		again, err := resource.ParseChallenges(joined)
		if err != nil {
			t.Fatalf("reparse %q (from %q): %v", joined, header, err)
		}
		if len(cs) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(cs, again) {
			t.Fatalf("round trip of %q:\n%#v\n%#v", header, cs, again)
		}
	})
}
