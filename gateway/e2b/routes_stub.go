package e2b

import "net/http"

// Placeholders, each replaced by the file that serves its routes.

func (a *API) envdRoutes(mux *http.ServeMux)    {} // process.go, filesystem.go
func (a *API) filesRoutes(mux *http.ServeMux)   {} // files.go
func (a *API) interpRoutes(mux *http.ServeMux)  {} // interp.go
