package mcpapi

import (
	"context"
	"encoding/json"
)

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name        string
	Description string
	// InputSchema and OutputSchema are JSON Schema objects; OutputSchema
	// is nil for a tool that declares none.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  ToolAnnotation
}

// ToolAnnotation holds a tool's behaviour hints. Every tool states all
// four, so clients never fall back on the specification's defaults.
type ToolAnnotation struct {
	ReadOnlyHint    bool
	DestructiveHint bool
	IdempotentHint  bool
	OpenWorldHint   bool
}

// ToolOption sets one property of a tool made by NewTool.
type ToolOption func(*Tool)

// NewTool returns the tool name with opts applied. Its hints start as
// the specification's defaults: not read-only, destructive, not
// idempotent, open-world.
func NewTool(name string, opts ...ToolOption) Tool {
	t := Tool{Name: name, Annotations: ToolAnnotation{DestructiveHint: true, OpenWorldHint: true}}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// WithDescription sets the tool's description.
func WithDescription(d string) ToolOption { return func(t *Tool) { t.Description = d } }

// WithReadOnlyHintAnnotation says whether the tool changes nothing.
func WithReadOnlyHintAnnotation(v bool) ToolOption {
	return func(t *Tool) { t.Annotations.ReadOnlyHint = v }
}

// WithDestructiveHintAnnotation says whether the tool may destroy.
func WithDestructiveHintAnnotation(v bool) ToolOption {
	return func(t *Tool) { t.Annotations.DestructiveHint = v }
}

// WithIdempotentHintAnnotation says whether calling the tool twice does
// what calling it once does.
func WithIdempotentHintAnnotation(v bool) ToolOption {
	return func(t *Tool) { t.Annotations.IdempotentHint = v }
}

// WithRawInputSchema sets the tool's input schema.
func WithRawInputSchema(s json.RawMessage) ToolOption {
	return func(t *Tool) { t.InputSchema = s }
}

// ServerTool is a tool to serve: its definition and the handler of its
// calls.
type ServerTool struct {
	Tool    Tool
	Handler ToolHandler
}

// CallToolRequest is one tools/call as a tool's handler sees it.
type CallToolRequest struct {
	Name      string
	Arguments map[string]any // never nil
	// Session is the legacy MCP session the call came in, or "" for a
	// sessionless (2026-07-28) request.
	Session string
	// ClientName is the clientInfo.name the request's _meta carries, or "".
	ClientName string
	// Notifier sends the call's notifications to its client; nil when
	// there is no one to notify.
	Notifier Notifier
}

// ToolHandler runs one tool call. Its error is a wiring failure, which
// the edge answers as a JSON-RPC error; what the user did wrong is a
// result with IsError set.
type ToolHandler func(ctx context.Context, req CallToolRequest) (*CallToolResult, error)

// CallToolResult is a tool's answer.
type CallToolResult struct {
	Content []Content
	// StructuredContent, when not nil, is the answer as data; Content
	// then holds the same as text.
	StructuredContent any
	IsError           bool
	// Meta holds the result's _meta members.
	Meta map[string]any
}

// NewToolResultText returns a result of one text block.
func NewToolResultText(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{NewTextContent(text)}}
}

// NewToolResultError returns an error result whose one text block says
// what went wrong.
func NewToolResultError(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{NewTextContent(text)}, IsError: true}
}

// NewToolResultStructured returns a result with v as its structured
// content and text as its text.
func NewToolResultStructured(v any, text string) *CallToolResult {
	return &CallToolResult{Content: []Content{NewTextContent(text)}, StructuredContent: v}
}

// Text returns the result's first text block, or "".
func (r *CallToolResult) Text() string {
	for _, c := range r.Content {
		if t, ok := c.(TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// Notifier sends one call's notifications to its client while the call
// runs; the edge implements it. A notification the client takes none of
// (no progressToken, a log level above info) is not sent.
type Notifier interface {
	// Progress sends a progress notification; total is 0 when unknown.
	Progress(progress, total int, message string)
	// Log sends a log message at level info from logger.
	Log(logger, text string)
	// Finish ends the call's notifications: it sends status as the last
	// one (progress at its total, or a log message from logger
	// "sandgate") and waits, bounded, until every notification of the
	// call has been written, so that the result cannot overtake them. It
	// does nothing for a call that sent none.
	Finish(status string)
}
