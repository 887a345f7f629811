package e2b

import (
	"errors"
	"net/http"

	"github.com/sandgate/sandgate/sandbox"
)

// Error categories a Backend wraps its errors in, so that this package
// can answer the HTTP status (or Connect code) E2B's SDKs expect. The
// error's own text is what the client sees.
var (
	ErrForbidden   = errors.New("forbidden")       // 403: the credential lacks a scope
	ErrInvalid     = errors.New("invalid request") // 400: the client must change the request
	ErrQuota       = errors.New("quota exceeded")  // 429: too many sandboxes or calls
	ErrUnsupported = errors.New("not supported")   // 501: a feature Sandgate does not offer
	// ErrPaused: a data-plane request to a sandbox its owner paused,
	// whose lifecycle does not resume it on traffic (409, as E2B's
	// proxy answers); Sandbox.connect resumes it. Pause answers it too
	// for a sandbox paused already (the SDK then returns false).
	ErrPaused = errors.New("sandbox is paused")
)

// httpStatus maps an error from a Backend or Runner to the status the
// SDKs understand; anything unknown is the server's fault.
func httpStatus(err error) int {
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrQuota):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnsupported), errors.Is(err, sandbox.ErrCannotPause):
		return http.StatusNotImplemented
	case errors.Is(err, ErrPaused):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}
