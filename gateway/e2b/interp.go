package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

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

// execute runs one cell and answers its events as newline-delimited
// JSON (see interp_events.go and interp_stream.go): its output as the
// cell prints it, then its results, error and count. The request's
// context is the cell's: a client that goes away interrupts it. The
// cell's timeout is the runner's default; the SDK keeps its own.
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
	rn, err := a.open(r.Context(), interpHeader(r.Header), opExecute)
	if err != nil {
		replyError(w, err)
		return
	}
	out := newCellStream(w)
	var res protocol.InterpResult
	op := Op{Name: opExecute, Scope: auth.ScopeExec,
		Summary: map[string]any{"language": ctxID, "code_bytes": len(req.Code), "env_vars": len(req.EnvVars)}}
	err = rn.Do(r.Context(), op, func(ctx context.Context, c *protocol.Client) error {
		var runErr error
		res, runErr = runCell(ctx, c, protocol.InterpRequest{Language: ctxID, Code: req.Code}, req.EnvVars, out.output)
		return runErr
	})
	out.flushTails()
	switch {
	case err != nil && !out.started:
		replyError(w, err)
	case err != nil:
		// The status line is gone: end the answer as E2B's interpreter
		// does when it loses a cell.
		a.log.Warn("e2b execute ended before the cell", "sandbox_id", rn.ID(), "error", err)
		out.send(errorEvent{Type: eventError, Name: "UnexpectedEndOfExecution", Value: err.Error()}, execEndEvent{Type: eventEnd})
	default:
		out.send(cellEvents(res, a.execs.next(rn.ID(), ctxID, res.Restarted), time.Now())...)
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
