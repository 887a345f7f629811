package e2b

import (
	"context"
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/sandbox"
)

// open resolves a data-plane request for operation op to its sandbox's
// runner by the E2b-Sandbox-Id and X-Access-Token headers. A missing
// token, a wrong one and an unknown sandbox are all sandbox.ErrNotFound:
// a caller learns nothing about sandboxes it holds no token for. The
// backend audits every refusal, missing headers included.
func (a *API) open(ctx context.Context, h http.Header, op string) (Runner, error) {
	id, token := h.Get(headerSandboxID), h.Get(headerAccessToken)
	r, err := a.backend.Open(ctx, id, token, op)
	if err != nil && (id == "" || token == "") {
		return nil, fmt.Errorf("the request needs the %s and %s headers (the sandbox id and the envdAccessToken its creation returned): %w",
			headerSandboxID, headerAccessToken, sandbox.ErrNotFound)
	}
	return r, err
}
