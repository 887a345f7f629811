package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Contexts. E2B runs a Jupyter kernel per context; a Sandgate sandbox has
// one interpreter per language (Python only here), so there is exactly
// one context, whose id is its language's name. Creating it describes
// it, and removing it keeps it: the interpreter is shared with the
// default context, whose state a removal must not wipe. Restarting it
// restarts the interpreter.
//
// The SDK sends no access token on /contexts (only the traffic token,
// when the sandbox has one), so create, list and remove, which change
// nothing and reveal nothing about the sandbox, need none; restart needs
// one.

// codeContext is a context as the SDK reads it.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd,omitempty"`
}

// pythonContext is the one context there is.
var pythonContext = codeContext{ID: string(protocol.Python), Language: string(protocol.Python)}

// createContextRequest is the body of POST /contexts.
type createContextRequest struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func createContext(w http.ResponseWriter, r *http.Request) {
	var req createContextRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		replyErrorStatus(w, http.StatusBadRequest, fmt.Sprintf("read the /contexts request: %v; send JSON {\"language\": \"python\"}", err))
		return
	}
	if _, err := contextLanguage(req.Language); err != nil {
		replyError(w, err)
		return
	}
	if req.Cwd != "" {
		replyErrorStatus(w, http.StatusBadRequest, "a context cannot have its own working directory here: the sandbox's one Python interpreter works in its workspace; drop cwd and call os.chdir() in your code")
		return
	}
	replyJSON(w, http.StatusOK, pythonContext)
}

func listContexts(w http.ResponseWriter, _ *http.Request) {
	replyJSON(w, http.StatusOK, []codeContext{pythonContext})
}

func removeContext(w http.ResponseWriter, r *http.Request) {
	if _, err := contextByID(r.PathValue("id")); err != nil {
		replyError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// restartContext replaces the interpreter with a fresh one.
func (a *API) restartContext(w http.ResponseWriter, r *http.Request) {
	lang, err := contextByID(r.PathValue("id"))
	if err != nil {
		replyError(w, err)
		return
	}
	rn, err := a.open(r.Context(), interpHeader(r.Header), opRestart)
	if err != nil {
		replyError(w, err)
		return
	}
	op := Op{Name: opRestart, Scope: auth.ScopeExec, Summary: map[string]any{"language": lang}}
	err = rn.Do(r.Context(), op, func(ctx context.Context, c *protocol.Client) error {
		var res protocol.InterpResult
		if err := c.Call(ctx, protocol.OpInterpRestart, protocol.InterpRestartRequest{Language: lang}, &res); err != nil {
			return err
		}
		if !res.Restarted {
			return fmt.Errorf("restart the interpreter: %s; try again when the running cell has ended", res.Message)
		}
		return nil
	})
	if err != nil {
		replyError(w, err)
		return
	}
	a.execs.reset(rn.ID(), lang)
	w.WriteHeader(http.StatusNoContent)
}

// contextLanguage is the context of a language name: python (or an
// alias, or none) is the only one.
func contextLanguage(name string) (string, error) {
	if name == "" {
		return string(protocol.Python), nil
	}
	lang, err := protocol.ParseLanguage(name)
	if err != nil || lang != protocol.Python {
		return "", fmt.Errorf("the code interpreter runs only python, not %q; run other languages with sandbox.commands.run: %w", name, ErrInvalid)
	}
	return string(lang), nil
}

// contextByID is the language of a context id.
func contextByID(id string) (string, error) {
	if id != pythonContext.ID {
		return "", fmt.Errorf("code context %q does not exist; the one context is %q (the sandbox's Python interpreter): %w", id, pythonContext.ID, sandbox.ErrNotFound)
	}
	return id, nil
}
