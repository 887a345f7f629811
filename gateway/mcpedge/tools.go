package mcpedge

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// AddTools serves tools (replacing any of the same name) and tells every
// session that the tool list changed (see AnnounceToolsChanged).
func (e *Edge) AddTools(tools ...mcpapi.ServerTool) {
	served := make([]server.ServerTool, len(tools))
	for i, t := range tools {
		served[i] = server.ServerTool{Tool: mcpTool(t.Tool), Handler: serveTool(t.Handler)}
	}
	e.AnnounceToolsChanged(func() { e.mcp.AddTools(served...) })
}

// RemoveTools stops serving the named tools, and tells every session
// when one of them was served: mcp-go announces a removal only then, and
// so does the standalone stream.
func (e *Edge) RemoveTools(names ...string) {
	if slices.ContainsFunc(names, func(name string) bool { return e.mcp.GetTool(name) != nil }) {
		e.AnnounceToolsChanged(func() { e.mcp.DeleteTools(names...) })
		return
	}
	e.mcp.DeleteTools(names...)
}

// mcpTool is t in mcp-go's terms. Every hint is stated, so that clients
// never fall back on the specification's defaults.
func mcpTool(t mcpapi.Tool) mcp.Tool {
	a := t.Annotations
	return mcp.Tool{Name: t.Name, Description: t.Description, RawInputSchema: t.InputSchema, RawOutputSchema: t.OutputSchema,
		Annotations: mcp.ToolAnnotation{ReadOnlyHint: &a.ReadOnlyHint, DestructiveHint: &a.DestructiveHint,
			IdempotentHint: &a.IdempotentHint, OpenWorldHint: &a.OpenWorldHint}}
}

// serveTool adapts run to mcp-go: the call's arguments are those the
// edge took out of the request body (toolcall.go), or mcp-go's for a
// request that did not come through it; its result's large texts are
// held for bulkWriter to splice in (bulktext.go).
func serveTool(run mcpapi.ToolHandler) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := mcpapi.CallToolRequest{Name: req.Params.Name, Arguments: callArguments(ctx, req), Session: SessionFrom(ctx)}
		var token mcp.ProgressToken
		if meta := req.Params.Meta; meta != nil {
			token = meta.ProgressToken
			if info := meta.ClientInfo(); info != nil {
				call.ClientName = info.Name
			}
		}
		if n := newNotifier(ctx, token); n != nil {
			call.Notifier = n
			// The result follows only what the call sent while it ran.
			defer n.out.end()
		}
		res, err := run(ctx, call)
		if err != nil {
			return nil, err
		}
		out := mcpResult(res)
		HoldLargeTexts(ctx, out)
		return out, nil
	}
}

// callArguments returns a call's decoded arguments, never nil.
func callArguments(ctx context.Context, req mcp.CallToolRequest) map[string]any {
	if msg, ok := MessageFrom(ctx); ok && msg.Args != nil {
		return msg.Args
	}
	if args := req.GetArguments(); args != nil {
		return args
	}
	return map[string]any{}
}

// mcpResult is r in mcp-go's terms.
func mcpResult(r *mcpapi.CallToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: mcpContents(r.Content), StructuredContent: r.StructuredContent, IsError: r.IsError}
	if len(r.Meta) > 0 {
		out.Meta = &mcp.Meta{AdditionalFields: r.Meta}
	}
	return out
}

func mcpContents(cs []mcpapi.Content) []mcp.Content {
	out := make([]mcp.Content, 0, len(cs))
	for _, c := range cs {
		out = append(out, mcpContent(c))
	}
	return out
}

// mcpContent is c in mcp-go's terms.
func mcpContent(c mcpapi.Content) mcp.Content {
	switch c := c.(type) {
	case mcpapi.TextContent:
		return mcp.NewTextContent(c.Text)
	case mcpapi.ImageContent:
		return mcp.NewImageContent(c.Data, c.MIMEType)
	case mcpapi.EmbeddedResource:
		return mcp.NewEmbeddedResource(mcpResourceContents(c.Resource))
	}
	panic("mcpedge: unknown content type") // mcpapi.Content is closed
}

// mcpResourceContents is r in mcp-go's terms.
func mcpResourceContents(r mcpapi.ResourceContents) mcp.ResourceContents {
	switch r := r.(type) {
	case mcpapi.TextResourceContents:
		return mcp.TextResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text}
	case mcpapi.BlobResourceContents:
		return mcp.BlobResourceContents{URI: r.URI, MIMEType: r.MIMEType, Blob: r.Blob}
	}
	panic("mcpedge: unknown resource contents type") // mcpapi.ResourceContents is closed
}

// CheckInputSchema is the package's CheckInputSchema, for the gateway's
// custom tools.
func (e *Edge) CheckInputSchema(schema json.RawMessage) error { return CheckInputSchema(schema) }

// CheckInputSchema reports what mcp-go would refuse in a tool's input
// schema: it panics when serving a tool whose x-mcp-header annotations
// break its rules, so an operator's tool is checked before it is served.
func CheckInputSchema(schema json.RawMessage) error {
	return mcp.ValidateParamHeaderAnnotations(&mcp.Tool{Name: "t", RawInputSchema: schema})
}
