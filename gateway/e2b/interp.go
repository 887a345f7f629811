package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/runner/protocol"
)

// maxExecuteBody bounds an /execute request's JSON: far above any cell
// a person or model writes, below the protocol's frame cap.
const maxExecuteBody = 16 << 20

// headerTrafficToken is the header @e2b/code-interpreter sends on every
// request when the sandbox has a traffic access token. Its /contexts
// calls send no X-Access-Token, so the data plane also takes the
// sandbox's access token from this header (the control plane reports it
// as the sandbox's trafficAccessToken).
const headerTrafficToken = "E2b-Traffic-Access-Token"

// interpRoutes serves the code interpreter (port 49999) of
// @e2b/code-interpreter on the runner's stateful Python interpreter.
func (a *API) interpRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /execute", a.execute)
	mux.HandleFunc("POST /contexts", createContext)
	mux.HandleFunc("GET /contexts", listContexts)
	mux.HandleFunc("DELETE /contexts/{id}", removeContext)
	mux.HandleFunc("POST /contexts/{id}/restart", a.restartContext)
	mux.HandleFunc("GET /health", health)
}

// executeRequest is the body of POST /execute.
type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// execute runs one cell and answers its output as newline-delimited JSON
// events (see interp_events.go). The runner answers a cell when it ends,
// so the events are written together at the end. The request's context
// is the cell's: a client that goes away interrupts it. The cell's
// timeout is the runner's default; the SDK keeps its own.
func (a *API) execute(w http.ResponseWriter, r *http.Request) {
	var req executeRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxExecuteBody)).Decode(&req); err != nil {
		replyErrorStatus(w, http.StatusBadRequest, fmt.Sprintf("read the /execute request: %v; send JSON {\"code\": ..., \"language\": \"python\"}", err))
		return
	}
	ctxID, err := executeContext(req)
	if err != nil {
		replyError(w, err)
		return
	}
	if err := checkEnvVars(req.EnvVars); err != nil {
		replyError(w, err)
		return
	}
	rn, err := a.open(r.Context(), interpHeader(r.Header))
	if err != nil {
		replyError(w, err)
		return
	}
	var res protocol.InterpResult
	op := Op{Name: "interpreter.execute", Scope: auth.ScopeExec,
		Summary: map[string]any{"language": ctxID, "code_bytes": len(req.Code), "env_vars": len(req.EnvVars)}}
	err = rn.Do(r.Context(), op, func(ctx context.Context, c *protocol.Client) error {
		var runErr error
		res, runErr = runCell(ctx, c, protocol.InterpRequest{Language: ctxID, Code: req.Code}, req.EnvVars)
		return runErr
	})
	if err != nil {
		replyError(w, err)
		return
	}
	count := a.execs.next(rn.ID(), ctxID, res.Restarted)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, ev := range cellEvents(res, count) {
		if err := enc.Encode(ev); err != nil {
			return // the client went away; the cell has run
		}
	}
}

// executeContext is the interpreter a request addresses: its context id
// when it has one (the SDK sends either that or a language), else its
// language, python when none.
func executeContext(req executeRequest) (string, error) {
	if req.ContextID != "" {
		return contextByID(req.ContextID)
	}
	return contextLanguage(req.Language)
}

// interpHeader is h with the sandbox's access token taken from
// E2B-Traffic-Access-Token when X-Access-Token is absent.
func interpHeader(h http.Header) http.Header {
	if h.Get(headerAccessToken) != "" || h.Get(headerTrafficToken) == "" {
		return h
	}
	h = h.Clone()
	h.Set(headerAccessToken, h.Get(headerTrafficToken))
	return h
}
