// Package fleet keeps the gateway's sandboxes: which exist, who owns
// each, which session or client it serves, and when it must end. It
// creates them (from the warm pool when one is ready), finds the default
// sandbox of a sessionless client, holds the one runner connection each
// sandbox's calls share, replaces a sandbox whose runner died, arms E2B
// deadlines, keeps egress allowlists, counts quotas, sweeps what is idle
// or expired, and reconciles its view with the provider's — in files
// under VarDir for a single gateway, or in the provider's records when
// replicas share it (replicas.go).
//
// It must never speak a protocol: it knows nothing of MCP, HTTP or the
// E2B API, builds no tool result and reads no request. Callers pass it
// an identity.Identity and get a *Box or an error whose text is written
// for the end user. Its notes (Note) are plain sentences the MCP edge
// attaches to results.
package fleet
