package gateway_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// TestLocalE2BListQuery: GET /v2/sandboxes honours every filter the SDKs
// send (JS SandboxPaginator, Python get_v2_sandboxes): template,
// startedAfter, state as one list or repeated, and order, newest first
// by default as E2B's, with the metadata filter and paging; a bad value
// is a 400 that says what is expected.
func TestLocalE2BListQuery(t *testing.T) {
	t.Parallel()
	base := e2bBase(startLocalGateway(t, nil))
	run := randHex(4)
	create := func(template string) e2bListed {
		var made e2bCreated
		body := map[string]any{"templateID": template, "metadata": map[string]string{"run": run}}
		if resp := e2bCall(t, "POST", base+"/sandboxes", nil, body, &made); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", template, resp.StatusCode)
		}
		var got e2bListed
		e2bCall(t, "GET", base+"/sandboxes/"+made.SandboxID, nil, nil, &got)
		return got
	}
	first, second := create("base"), create("code-interpreter-v1")
	if !first.StartedAt.Before(second.StartedAt) {
		t.Fatalf("the second sandbox started at %v, not after the first (%v)", second.StartedAt, first.StartedAt)
	}
	a, b := first.SandboxID, second.SandboxID
	for _, tt := range []struct {
		query string
		want  []string
		next  string // X-Next-Token
	}{
		{query: "", want: []string{b, a}},
		{query: "order=desc", want: []string{b, a}},
		{query: "order=asc", want: []string{a, b}},
		{query: "template=base", want: []string{a}},
		{query: "template=code-interpreter-v1", want: []string{b}},
		{query: "template=other", want: []string{}},
		{query: "startedAfter=" + url.QueryEscape(second.StartedAt.Format(time.RFC3339Nano)), want: []string{b}},
		{query: "startedAfter=" + url.QueryEscape(first.StartedAt.UTC().Format("2006-01-02T15:04:05.999999999")), want: []string{b, a}},
		{query: "state=running,paused", want: []string{b, a}},
		{query: "state=paused&state=running", want: []string{b, a}},
		{query: "state=paused", want: []string{}},
		{query: "order=asc&limit=1", want: []string{a}, next: a},
		{query: "order=asc&limit=1&nextToken=" + a, want: []string{b}},
	} {
		t.Run(tt.query, func(t *testing.T) {
			var page []e2bListed
			resp := e2bCall(t, "GET", base+"/v2/sandboxes?metadata="+url.QueryEscape("run="+run)+"&"+tt.query, nil, nil, &page)
			got := []string{}
			for _, s := range page {
				got = append(got, s.SandboxID)
			}
			if resp.StatusCode != http.StatusOK || !slices.Equal(got, tt.want) || resp.Header.Get("X-Next-Token") != tt.next {
				t.Fatalf("%d %v (next %q), want %v (next %q)", resp.StatusCode, got, resp.Header.Get("X-Next-Token"), tt.want, tt.next)
			}
		})
	}
	for _, q := range []string{"order=sideways", "startedAfter=yesterday", "limit=0"} {
		if resp := e2bCall(t, "GET", base+"/v2/sandboxes?"+q, nil, nil, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, resp.StatusCode)
		}
	}
}
