// Package mcpedge is the gateway's MCP edge: it owns mcp-go's server and
// its Streamable HTTP transport, and every adaptation of them the gateway
// needs. In the order a request meets them (middleware.go):
//
//   - origin check and a bounded, timed body read;
//   - one decode of the JSON-RPC message (peek.go), a tools/call's large
//     arguments taken out so mcp-go does not decode them again
//     (toolcall.go);
//   - the caller's identity and the scopes the message needs;
//   - legacy sessions: ids made and checked here (sessions.go), bound to
//     their owner on the first response (binding.go), routed to the
//     replica that holds them;
//   - the standalone GET stream of a legacy session, served here rather
//     than by mcp-go (standalone.go, standalone_hub.go);
//   - a running call's progress and log notifications written into its
//     own response by the edge, not queued for mcp-go, which can lose
//     them (notify.go);
//   - large text results spliced into the response unencoded by mcp-go
//     (bulktext.go);
//   - a tools/list_changed that mcp-go dropped at the end of a request
//     queued again for a session without a stream (redeliver.go);
//   - the error codes of the spec's resource-not-found error, which
//     mcp-go writes as an internal error (rpccodes.go).
//
// It must never run a tool or touch a sandbox: the gateway registers
// tools, resources and prompts with their handlers (AddTools,
// AddResource, AddPrompt), and what a message needs (its scopes, the
// end of a session, the caller's resources) comes in through Config.
// Where a workaround relies on how mcp-go behaves, a test here pins that
// behaviour against mcp-go itself (pins_test.go: one Write per message,
// the session manager's calls, the shape of a broadcast; FuzzPeekMessage:
// mcp-go reads the split request as the original), so an upgrade that
// changes it fails here.
//
// Nothing else in the module imports mcp-go (gateway/layering checks):
// the tools, resources and prompts speak gateway/mcpapi's types. tools.go
// serves the tools (their definitions, arguments and results
// converted), notify.go sends a running call's progress and log
// notifications and keeps the result from overtaking them, and
// resources.go serves resources, prompts, completions and subscriptions
// of both eras through mcp-go's hooks.
package mcpedge
