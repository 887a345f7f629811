// Package e2b serves an E2B-compatible HTTP API, so that the unmodified
// E2B SDKs (npm e2b and @e2b/code-interpreter, and the Python ones) can
// drive Sandgate's sandboxes with E2B_API_URL and E2B_SANDBOX_URL pointed
// at the gateway.
//
// It is a thin layer: every sandbox, identity, quota, egress policy and
// audit record belongs to the gateway, reached through Backend. The
// control plane (REST: /sandboxes, /v2/sandboxes) acts as the principal
// the gateway authenticated; the data plane (the envd process and
// filesystem services over Connect, /files, and the code interpreter's
// /execute) is routed by the E2b-Sandbox-Id and E2b-Sandbox-Port headers
// and authorised by the sandbox's access token alone, as E2B's is.
//
// The process and filesystem services are generated from our own .proto
// files (proto/), written from E2B's published envd interface; `make
// generate` regenerates envd/.
package e2b
