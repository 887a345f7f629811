package e2b

import (
	"log/slog"
	"net/http"
)

// Headers that route a data-plane request: E2B's SDKs send them when
// E2B_SANDBOX_URL points every sandbox at one origin.
const (
	headerSandboxID   = "E2b-Sandbox-Id"
	headerSandboxPort = "E2b-Sandbox-Port"
	headerAccessToken = "X-Access-Token"
)

// Ports the SDKs address inside a sandbox: envd (processes, files) and
// the code interpreter.
const (
	EnvdPort        = "49983"
	InterpreterPort = "49999"
)

// EnvdVersion is the envd version this API reports. The SDKs enable
// features by it (for example closeStdin from 0.5.2, octet-stream
// uploads from 0.5.7); what it enables and Sandgate lacks is refused
// with a message.
const EnvdVersion = "0.5.7"

// Options configures the API.
type Options struct {
	Backend Backend
	// Authenticate wraps the control plane. It answers 401 itself and
	// puts the caller's identity in the request context for Backend.
	Authenticate func(http.Handler) http.Handler
	Log          *slog.Logger
}

// API is the E2B-compatible HTTP API.
type API struct {
	backend Backend
	log     *slog.Logger
	control http.Handler
	envd    *http.ServeMux // data plane, port 49983
	interp  *http.ServeMux // data plane, port 49999
	execs   execCounter    // the code interpreter's execution counts (interp_count.go)
}

// New builds the API.
func New(opts Options) *API {
	a := &API{backend: opts.Backend, log: opts.Log, envd: http.NewServeMux(), interp: http.NewServeMux()}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	control := http.NewServeMux()
	a.controlRoutes(control)
	a.control = control
	if opts.Authenticate != nil {
		a.control = opts.Authenticate(control)
	}
	a.envdRoutes(a.envd)
	a.filesRoutes(a.envd)
	a.interpRoutes(a.interp)
	return a
}

// IsDataPlane reports whether r is addressed to a sandbox (it carries
// E2b-Sandbox-Id), which the data plane serves whatever its path.
func IsDataPlane(r *http.Request) bool { return r.Header.Get(headerSandboxID) != "" }

// ServeHTTP routes a data-plane request by its port header, and anything
// else to the control plane.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !IsDataPlane(r) {
		a.control.ServeHTTP(w, r)
		return
	}
	switch port := r.Header.Get(headerSandboxPort); port {
	case EnvdPort, "":
		a.envd.ServeHTTP(w, r)
	case InterpreterPort:
		a.interp.ServeHTTP(w, r)
	default:
		http.Error(w, "port "+port+" of a sandbox cannot be reached: Sandgate serves only the sandbox agent (49983) and the code interpreter (49999); sandboxes have no inbound network", http.StatusBadGateway)
	}
}
