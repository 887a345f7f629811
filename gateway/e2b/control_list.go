package e2b

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// List pages: at most maxPage sandboxes per answer; the x-next-token
// header carries the id of the last one when more follow, and the next
// page starts after it in the list's order.
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
		if !s.Paused {
			out = append(out, detail(s, false))
		}
	}
	replyJSON(w, http.StatusOK, out)
}

// listPage is GET /v2/sandboxes with every filter the SDKs send (see
// listQuery), limit and nextToken.
func (a *API) listPage(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		replyErrorStatus(w, http.StatusBadRequest, err.Error())
		return
	}
	all, err := a.backend.List(r.Context())
	if err != nil {
		a.fail(w, err)
		return
	}
	all = slices.DeleteFunc(all, func(s Sandbox) bool { return !lq.matches(s) })
	if lq.newestFirst {
		slices.Reverse(all)
	}
	if next := lq.next; next != "" {
		i := slices.IndexFunc(all, func(s Sandbox) bool { return s.ID == next })
		all = all[i+1:] // i is -1 for a sandbox gone since: start over
	}
	if len(all) > lq.limit {
		w.Header().Set("X-Next-Token", all[lq.limit-1].ID)
		all = all[:lq.limit]
	}
	out := make([]sandboxDetail, 0, len(all))
	for _, s := range all {
		out = append(out, detail(s, false))
	}
	replyJSON(w, http.StatusOK, out)
}

// listQuery is what GET /v2/sandboxes filters by: metadata (URL-encoded
// key=value pairs), state (running, paused or both, the default),
// template (id or alias), startedAfter, and order (by start, "desc" by
// default as E2B's; the SDKs send it only when asked).
type listQuery struct {
	limit        int
	metadata     url.Values
	states       []string // stateRunning, statePaused
	template     string
	startedAfter time.Time
	newestFirst  bool
	next         string
}

func parseListQuery(q url.Values) (listQuery, error) {
	lq := listQuery{limit: defaultPage, template: q.Get("template"), next: q.Get("nextToken"), newestFirst: true,
		states: []string{stateRunning, statePaused}}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return lq, errors.New("limit must be a number from 1 to " + strconv.Itoa(maxPage))
		}
		lq.limit = n
	}
	var err error
	if lq.metadata, err = url.ParseQuery(q.Get("metadata")); err != nil {
		return lq, errors.New("metadata must be URL-encoded key=value pairs: " + err.Error())
	}
	// One list (state=running,paused) or the parameter repeated.
	if len(q["state"]) > 0 {
		lq.states = strings.Split(strings.Join(q["state"], ","), ",")
		for _, st := range lq.states {
			if st != stateRunning && st != statePaused {
				return lq, errors.New(`state must be "running", "paused" or both, comma-separated`)
			}
		}
	}
	if v := q.Get("startedAfter"); v != "" {
		if lq.startedAfter, err = parseTime(v); err != nil {
			return lq, errors.New("startedAfter must be an ISO 8601 time, e.g. " + time.Now().UTC().Format(time.RFC3339))
		}
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		lq.newestFirst = false
	default:
		return lq, errors.New(`order must be "asc" or "desc"`)
	}
	return lq, nil
}

// parseTime reads an ISO 8601 time; one without a zone (Python's
// isoformat of a naive datetime) is UTC.
func parseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t, err = time.Parse("2006-01-02T15:04:05.999999999", v)
	}
	return t, err
}

// matches reports whether s passes every filter of lq.
func (lq listQuery) matches(s Sandbox) bool {
	state := stateRunning
	if s.Paused {
		state = statePaused
	}
	if !slices.Contains(lq.states, state) || s.StartedAt.Before(lq.startedAfter) {
		return false
	}
	if lq.template != "" && lq.template != s.Template && lq.template != s.Image {
		return false
	}
	for k := range lq.metadata {
		if s.Metadata[k] != lq.metadata.Get(k) {
			return false
		}
	}
	return true
}
