package browser_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/browser"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestRoutePatterns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		regex   bool
		url     string
		want    bool
	}{
		{"*://api.example.com/*", false, "http://api.example.com/v1/users?id=1", true},
		{"*://api.example.com/*", false, "https://api.example.com/", true},
		{"*://api.example.com/*", false, "http://api.example.com.evil.test/x", false},
		{"*://api.example.com/*", false, "http://127.0.0.1:8000/page.html", false},
		{"http://x.test/a?c", false, "http://x.test/abc", true}, // ? is one character, not a query
		{`http://x.test/a\?c`, false, "http://x.test/a?c", true},
		{`http://x.test/a\?c`, false, "http://x.test/abc", false},
		{"http://x.test/a.b", false, "http://x.test/aXb", false}, // . is literal
		{"*.png", false, "http://x.test/img/logo.png", true},
		{`/api/v[0-9]+/`, true, "http://x.test/api/v2/items", true},
		{`^https://`, true, "http://x.test/", false},
	} {
		got, err := browser.RouteMatches(protocol.Route{Pattern: tc.pattern, Regex: tc.regex}, tc.url)
		if err != nil || got != tc.want {
			t.Errorf("%q (regex %v) on %q = %v, %v; want %v", tc.pattern, tc.regex, tc.url, got, err, tc.want)
		}
	}
}

func TestRouteErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		route protocol.Route
		want  string
	}{
		{protocol.Route{}, "pattern is empty"},
		{protocol.Route{Pattern: "(", Regex: true}, "not a valid regular expression"},
		{protocol.Route{Pattern: "*", Status: 42}, "not an HTTP status"},
		{protocol.Route{Pattern: "*", Block: true, Status: 200}, "blocks or fulfils, not both"},
		{protocol.Route{Pattern: "*", Headers: map[string]string{"Bad Name": "x"}}, "not a valid header name"},
		{protocol.Route{Pattern: "*", Body: make([]byte, protocol.MaxRouteBodyBytes+1)}, "the most is"},
	} {
		if _, err := browser.RouteMatches(tc.route, "http://x.test/"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.route.Pattern, err, tc.want)
		}
	}
}
