// Package layering keeps the module's layering as code, in the manner of
// Tailscale's tstest/deptest: Rules is a table of what must never import
// what, and TestRules fails `go test ./...` (and so `make test`) when a
// package breaks one, naming the import chain that does.
//
// The layers, bottom up: the runner (runner/..., cmd/runner), which runs
// inside every sandbox and must stay small and free of the gateway's
// dependencies; sandbox/... and auth/..., the gateway's libraries; and the
// gateway (gateway/..., cmd/gateway) on top, which alone may see them all.
//
// The rules read the import graph `go list -deps` reports for the
// packages' own files, built for linux as `make build` builds them
// (CGO_ENABLED=0). Test files are left out on purpose: a test may reach
// across layers (runner/protocol's tests serve the runner through
// sandbox/sandboxtest), and no test is linked into a binary.
//
// The package lives under gateway/ because the top level is fixed and
// the gateway is the one layer allowed to know all the others; it
// imports nothing but the standard library, so it compiles in a moment.
package layering
