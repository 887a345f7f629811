package e2b

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// List pages: at most maxPage sandboxes per answer; the x-next-token
// header carries the id of the last one when more follow, and the next
// page starts after it in the list's order (oldest first).
const (
	defaultPage = 100
	maxPage     = 100
)

// listAll is the older GET /sandboxes: every running sandbox, one page.
func (a *API) listAll(w http.ResponseWriter, r *http.Request) {
	all, err := a.backend.List(r.Context())
	if err != nil {
		a.fail(w, err)
		return
	}
	out := make([]sandboxDetail, 0, len(all))
	for _, s := range all {
		out = append(out, detail(s, false))
	}
	replyJSON(w, http.StatusOK, out)
}

// listPage is GET /v2/sandboxes with the SDK's filters: state (every
// sandbox here is running), metadata (key=value pairs, URL-encoded),
// limit and nextToken.
func (a *API) listPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			replyErrorStatus(w, http.StatusBadRequest, "limit must be a number from 1 to "+strconv.Itoa(maxPage))
			return
		}
		limit = n
	}
	want, err := url.ParseQuery(q.Get("metadata"))
	if err != nil {
		replyErrorStatus(w, http.StatusBadRequest, "metadata must be URL-encoded key=value pairs: "+err.Error())
		return
	}
	all, err := a.backend.List(r.Context())
	if err != nil {
		a.fail(w, err)
		return
	}
	if states := q.Get("state"); states != "" && !slices.Contains(strings.Split(states, ","), "running") {
		all = nil // nothing is ever paused
	}
	all = slices.DeleteFunc(all, func(s Sandbox) bool { return !hasMetadata(s, want) })
	if next := q.Get("nextToken"); next != "" {
		i := slices.IndexFunc(all, func(s Sandbox) bool { return s.ID == next })
		all = all[i+1:] // i is -1 for a sandbox gone since: start over
	}
	if len(all) > limit {
		w.Header().Set("X-Next-Token", all[limit-1].ID)
		all = all[:limit]
	}
	out := make([]sandboxDetail, 0, len(all))
	for _, s := range all {
		out = append(out, detail(s, false))
	}
	replyJSON(w, http.StatusOK, out)
}

// hasMetadata reports whether s carries every key=value of want.
func hasMetadata(s Sandbox, want url.Values) bool {
	for k := range want {
		if s.Metadata[k] != want.Get(k) {
			return false
		}
	}
	return true
}
