// Package gateway wires Sandgate's gateway together: the MCP edge, the
// tools, the resources and prompts, the E2B API and the fleet of
// sandboxes they share, behind one HTTP handler. It holds only the
// wiring: the configuration (config.go), the server and its background
// loop (server.go), the scopes a request needs (scopes.go), egress and
// metrics hooks, and the HTTP server's limits.
//
// The rest lives in packages of one job each:
//   - gateway/mcpedge: mcp-go's server and transport and every adaptation
//     of them (request decoding, sessions, the standalone stream, bulk
//     text, converting gateway/mcpapi's types); a request reaches a
//     handler here only through it;
//   - gateway/mcpws: MCP over WebSocket (/mcp/ws), a bridge that posts
//     each message to /mcp in process, so a WebSocket session is an
//     HTTP one;
//   - gateway/mcpapi: the MCP surface in the gateway's own types, which
//     the tools, resources and prompts build;
//   - gateway/tools: the MCP tools and the handler every call goes
//     through (rate limit, validation, sandbox, audit records);
//   - gateway/resources: the MCP resources (sandbox files, the caller's
//     audit records), their completion and subscriptions, and the
//     prompts built on them;
//   - gateway/fleet: the sandboxes themselves (creation, the warm pool,
//     default sandboxes, deadlines, allowlists, quotas, death and
//     replacement, sweeps, reconciliation, records for replicas);
//   - gateway/e2bbackend: the E2B API on the same sandboxes, beside
//     gateway/e2b (its wire protocol);
//   - gateway/audit, gateway/egress, gateway/metrics, gateway/manifest
//     (custom tools), gateway/codesearch.
//
// A tool call's route, top to bottom: mcpedge.Edge.Middleware (origin,
// body, identity, scopes, session) → mcp-go → mcpedge (tools.go: the
// request as mcpapi.CallToolRequest) → tools.Toolbox's handler (call.go:
// rate limit, validation, the sandbox from fleet.Fleet, its runner from
// fleet.Fleet.Attach, tool.start record) → the tool's run (one file per
// family in gateway/tools) → tool.end record → mcpedge (the result in
// mcp-go's terms, bulk text) → the client.
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
