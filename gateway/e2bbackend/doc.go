// Package e2bbackend serves the E2B-compatible API (package gateway/e2b,
// which speaks the wire protocol) from the gateway's sandboxes
// (gateway/fleet): it authenticates control-plane callers by API key or
// OAuth token, creates, lists, times out and kills their sandboxes,
// issues and checks the access tokens of the data plane, and audits every
// call as the MCP tools are audited ("e2b." + the operation's name).
//
// It must never touch MCP: a sandbox made here is an ordinary sessionless
// fleet.Box, usable from MCP by its id, and nothing here knows that MCP
// exists.
package e2bbackend
