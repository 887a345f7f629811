package e2b

import "net/http"

// unsupportedRoutes answers the parts of E2B's API that Sandgate does
// not offer with a 400 that says what instead, rather than a bare 404
// an SDK would report as "sandbox not found".
func (a *API) unsupportedRoutes(mux *http.ServeMux) {
	for pattern, msg := range map[string]string{
		"GET /sandboxes/{id}/logs":    "sandbox logs are not served here: read a command's output from its handle, or the audit log",
		"GET /v2/sandboxes/{id}/logs": "sandbox logs are not served here: read a command's output from its handle, or the audit log",
		"/templates":                  "building templates is not supported: the operator chooses images (gateway --images) and template aliases",
		"/templates/":                 "building templates is not supported: the operator chooses images (gateway --images) and template aliases",
		"/v2/templates/":              "building templates is not supported: the operator chooses images (gateway --images) and template aliases",
		"/v3/templates":               "building templates is not supported: the operator chooses images (gateway --images) and template aliases",
		"/volumes":                    "volumes are not supported: each sandbox has its own /workspace",
		"/volumes/":                   "volumes are not supported: each sandbox has its own /workspace",
		"/volumecontent/":             "volumes are not supported: each sandbox has its own /workspace",
		"/secrets":                    "secrets are not supported: never put credentials in a sandbox",
		"/secrets/":                   "secrets are not supported: never put credentials in a sandbox",
	} {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			replyErrorStatus(w, http.StatusBadRequest, msg)
		})
	}
}

// ControlPrefixes are the paths the control plane serves; the gateway
// routes them (and every request carrying a sandbox id) to the API.
var ControlPrefixes = []string{"/sandboxes", "/v2/sandboxes", "/snapshots", "/templates", "/v2/templates/", "/v3/templates", "/volumes", "/volumecontent/", "/secrets"}
