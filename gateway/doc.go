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
//   - Shutdown removes every sandbox this gateway owns; a restarted gateway
//     removes session-bound containers it finds (their sessions died with
//     the old process) and adopts unexpired sessionless ones.
package gateway
