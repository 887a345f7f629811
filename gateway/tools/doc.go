// Package tools holds the gateway's MCP tools: one file per family
// (files.go, search.go, paths.go, exec.go, process.go, code.go,
// interp.go, notebook_tool.go, sandbox.go, audit.go, browser.go,
// browser_net.go, network.go, http.go), the operator's custom tools
// (custom.go, custom_dir.go), and the one handler every call goes
// through (call.go).
//
// A call's route through this package, top to bottom: Toolbox.handler
// takes the call's identity and arguments (the MCP edge decoded them),
// applies the tenant's rate limit (ratelimit.go), validates the
// arguments against the tool's input schema (validate.go), finds the
// call's sandbox and connects to its runner through the fleet
// (call.attach), writes the tool.start audit record, runs the tool
// (binding its arguments, bind.go and args.go; streaming a command's
// output as notifications, stream.go), writes the tool.end record, and
// returns the result with any note on where it ran (callnote.go).
// Errors become words for the user in errors.go, and only there.
//
// Tools build gateway/mcpapi's types and never import mcp-go or the MCP
// edge: the edge serves Toolbox.Served and calls back through
// mcpapi.ToolHandler. Sandboxes come from gateway/fleet, which the tools
// ask and never bypass. Resources read files through the same audited,
// rate-limited path (RunReadOnly, ReadOnHost), and the E2B API shares
// the rate limit and the end-of-call record (Allow, AppendEnd).
package tools
