package e2b

import "net/http"

// Placeholders, each replaced by the file that serves its routes.

func (a *API) envdRoutes(mux *http.ServeMux)    {} // process.go, filesystem.go
