package codesearch_test

import (
	"slices"
	"testing"

	"github.com/sandgate/sandgate/runner/codesearch"
)

func terms(s string) []string {
	var out []string
	codesearch.Terms(s, func(t string) { out = append(out, t) })
	return out
}

func TestTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"MaxFrameBytes", []string{"max", "frame", "byte", "maxframebytes"}},
		{"max_frame_bytes", []string{"max", "frame", "byte", "maxframebytes"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"parseJSONBody2", []string{"parse", "json", "body", "parsejsonbody2"}},
		{"utf8Valid", []string{"utf", "valid", "utf8valid"}},
		{"where is the audit hash chain verified?", []string{"audit", "hash", "chain", "verify"}},
		{"s.opts.Workspace", []string{"opt", "workspace"}},
		{"__init__", []string{"init"}},
		{"Größe_prüfen", []string{"größe", "prüfen", "größeprüfen"}},
		{"", nil},
		{"a b c", nil},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := terms(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"verified": "verify", "verifies": "verify", "verify": "verify",
		"limits": "limit", "limited": "limit", "limiting": "limit",
		"running": "run", "stopped": "stop", "hashes": "hash", "matches": "match",
		"class": "class", "status": "status", "analysis": "analysis", "bytes": "byte",
		"go": "go", "is": "is",
	} {
		if got := codesearch.Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"MaxFrameBytes", "a_b_C", "ÄÖÜ9x", "\xff\xfe", "HTTP2Server"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		codesearch.Terms(s, func(term string) {
			if term == "" {
				t.Fatalf("Terms(%q) emitted an empty term", s)
			}
		})
	})
}
