package mcpapi

import "context"

type sessionKey struct{}

// WithSession returns ctx carrying the legacy MCP session a request came
// in; the edge sets it on every request it hands a handler.
func WithSession(ctx context.Context, session string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session)
}

// SessionFrom returns the legacy MCP session of ctx's request, or "" for
// a sessionless (2026-07-28) request.
func SessionFrom(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(string)
	return s
}
