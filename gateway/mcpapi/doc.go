// Package mcpapi is the gateway's MCP surface in its own types: the tool
// definitions and results, resources and their contents, prompts and
// completions that the tools, resources and prompts packages build, and
// the hooks through which a running call notifies its client.
//
// The names follow the MCP specification (and so read like mcp-go's),
// but nothing here imports mcp-go: the MCP edge (gateway/mcpedge) alone
// translates these types to and from the library's, so an upgrade of the
// library, or a change of library, is confined to the edge. This
// package holds data and small constructors only; it must never import
// another gateway package.
package mcpapi
