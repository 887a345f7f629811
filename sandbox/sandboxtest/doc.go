// Package sandboxtest holds test helpers for sandbox providers: a Docker
// presence check that cannot let CI pass by skipping, a gate for the
// Kubernetes tier that fails rather than skips once that tier is asked
// for, a builder for the runner binary, and Conformance, the behaviour
// every sandbox.Provider must show.
package sandboxtest
