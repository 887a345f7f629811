// Package runner is the agent that runs inside every sandbox. It serves the
// protocol of runner/protocol over a websocket on a unix socket, and
// dispatches each request to the file, process and code packages.
//
// The runner runs as the sandbox's non-root user and holds no secrets: it
// knows nothing of the gateway, of tokens or of other sandboxes. Its only
// trust boundary is the socket, which only the gateway can reach.
package runner
