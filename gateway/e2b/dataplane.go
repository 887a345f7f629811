package e2b

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/sandbox"
)

// open resolves a data-plane request to its sandbox's runner by the
// E2b-Sandbox-Id and X-Access-Token headers. A missing token, a wrong
// one and an unknown sandbox are all sandbox.ErrNotFound: a caller
// learns nothing about sandboxes it holds no token for.
func (a *API) open(ctx context.Context, h http.Header) (Runner, error) {
	id, token := h.Get(headerSandboxID), h.Get(headerAccessToken)
	if id == "" || token == "" {
		return nil, fmt.Errorf("the request needs the %s and %s headers (the sandbox id and the envdAccessToken its creation returned): %w",
			headerSandboxID, headerAccessToken, sandbox.ErrNotFound)
	}
	return a.backend.Open(ctx, id, token)
}
