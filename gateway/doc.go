// Package gateway is the MCP server: it serves Streamable HTTP at /mcp,
// binds each MCP session (or each sandbox created with sandbox_create) to
// its owner and to a container, forwards tool calls to the runner in that
// container over one persistent connection, streams output back as
// notifications, and writes an audit record before any result leaves.
//
// Lifetimes, in one place:
//   - A tool call's process tree is cancelled by its timeout, by
//     notifications/cancelled, or by the client disconnecting (all three end
//     the request context mcp-go hands the handler).
//   - A legacy session's sandbox is created on its first tool call and
//     removed on DELETE, idle TTL or max lifetime; a sandbox from
//     sandbox_create is removed by sandbox_destroy, idle TTL or max lifetime.
//   - Shutdown removes the warm pool's sandboxes and those of legacy
//     sessions (whose ids die with the process) and leaves every
//     sessionless one running; a restarted gateway removes session-bound
//     containers it finds and adopts unexpired sessionless ones, so an
//     upgrade (stop, start a newer build) loses no sandbox and no file.
//
// Replicas (Config.Replicated, set by cmd/gateway for Kubernetes): several
// gateways share one provider's sandboxes and keep what the others need
// in the provider's records (gateway/fleet). A sessionless sandbox works on
// every replica; a legacy session lives on the replica that started it,
// so a load balancer must route by Mcp-Session-Id (another replica answers
// 404, saying so). Shutdown ends this replica's sessions and removes
// their sandboxes, and leaves sessionless ones to the others; a starting
// replica removes only what is due (expired, idle by its record), never
// another replica's. Each replica writes its own hash-chained audit log
// under its own VarDir, verifiable on its own; a sandbox's records are
// spread over the logs of the replicas that served it.
package gateway
