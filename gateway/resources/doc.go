// Package resources holds the gateway's MCP resources and the prompts
// built on them: sandbox files as sandbox://<sandbox_id>/<path>
// (resources.go), read whole or as a directory's listing (read.go),
// listed with the caller's recent files (list.go), completed
// (completion.go) and watched for changes (subscribe.go, watch.go); the
// caller's own audit records as audit://me/recent; and the prompts that
// show an agent how to use the tools for common jobs (prompts.go,
// prompts_embed.go).
//
// Every read goes through the tools' audited, rate-limited path
// (tools.Toolbox.RunReadOnly), so a resource read is recorded and
// limited as a read-only tool call is. The package builds
// gateway/mcpapi's types and never imports mcp-go or the MCP edge: the
// gateway registers it with the edge (Service.Register), and the edge
// calls it for the rest (Service implements mcpedge.Resources). A
// resource the caller cannot have is an error wrapping
// mcpapi.ErrResourceNotFound, whatever the reason, so that someone
// else's sandbox looks like a missing one.
package resources
