package e2b

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// Snapshots and forks: createSnapshot (POST /sandboxes/{id}/snapshots),
// listSnapshots (GET /snapshots, paged as the sandbox list is),
// deleteSnapshot (DELETE /templates/{id}: a snapshot is a template to
// the SDKs, and Sandbox.create takes its id or name as one) and fork
// (POST /sandboxes/{id}/fork, 1 to 100 sandboxes, each answered on its
// own).

// maxForks bounds one fork, as E2B's does.
const maxForks = 100

// snapshotInfo is E2B's SnapshotInfo.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func snapshotOf(s Snapshot) snapshotInfo {
	return snapshotInfo{SnapshotID: s.ID, Names: append([]string{}, s.Names...)}
}

func (a *API) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name string `json:"name"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	s, err := a.backend.CreateSnapshot(r.Context(), r.PathValue("id"), body.Name)
	if err != nil {
		a.fail(w, err)
		return
	}
	replyJSON(w, http.StatusCreated, snapshotOf(s))
}

func (a *API) listSnapshots(w http.ResponseWriter, r *http.Request) {
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
	all, err := a.backend.ListSnapshots(r.Context(), q.Get("sandboxID"), q.Get("name"))
	if err != nil {
		a.fail(w, err)
		return
	}
	if next := q.Get("nextToken"); next != "" {
		i := slices.IndexFunc(all, func(s Snapshot) bool { return s.ID == next })
		all = all[i+1:] // i is -1 for one deleted since: start over
	}
	if len(all) > limit {
		w.Header().Set("X-Next-Token", all[limit-1].ID)
		all = all[:limit]
	}
	out := make([]snapshotInfo, 0, len(all))
	for _, s := range all {
		out = append(out, snapshotOf(s))
	}
	replyJSON(w, http.StatusOK, out)
}

// deleteSnapshot answers 204, or 404 for what is none of the caller's
// snapshots (the SDK then returns false); templates cannot be built
// here, so there is nothing else to delete.
func (a *API) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	err := a.backend.DeleteSnapshot(r.Context(), r.PathValue("id"))
	if errors.Is(err, sandbox.ErrNoSnapshot) {
		replyErrorStatus(w, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// forkResult is one fork in E2B's answer: the sandbox, or its error.
type forkResult struct {
	Sandbox *sandboxCreated `json:"sandbox,omitempty"`
	Error   *apiError       `json:"error,omitempty"`
}

func (a *API) fork(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Timeout *int64 `json:"timeout"` // seconds
		Count   *int   `json:"count"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	count := 1
	if body.Count != nil {
		count = *body.Count
	}
	if count < 1 || count > maxForks {
		replyErrorStatus(w, http.StatusBadRequest, "count must be from 1 to "+strconv.Itoa(maxForks))
		return
	}
	var timeout time.Duration
	if body.Timeout != nil {
		d, err := seconds("timeout", *body.Timeout, 1, maxTimeoutSeconds)
		if err != nil {
			replyErrorStatus(w, http.StatusBadRequest, err.Error())
			return
		}
		timeout = d
	}
	forks, err := a.backend.Fork(r.Context(), r.PathValue("id"), count, timeout)
	if err != nil {
		a.fail(w, err)
		return
	}
	out := make([]forkResult, len(forks))
	for i, f := range forks {
		if f.Err != nil {
			status := dataStatus(f.Err)
			out[i].Error = &apiError{Code: status, Message: f.Err.Error()}
			continue
		}
		c := created(f.Sandbox)
		out[i].Sandbox = &c
	}
	replyJSON(w, http.StatusCreated, out)
}
