package gateway

import (
	"slices"

	"github.com/sandgate/sandgate/gateway/mcpedge"
	"github.com/sandgate/sandgate/gateway/resources"
)

// neededScopes returns the scopes a request needs: a tools/call its
// tool's; reading or subscribing to a resource (resources/subscribe, or
// the resourceSubscriptions of a 2026-07-28 subscriptions/listen), and
// completing a file path, what reading it with the tools needs
// (sandbox:files:read for sandbox files, sandbox:audit for the audit
// records). Every other method needs none: listing is open to any valid
// token, and what a list shows is filtered by scope instead (see
// resources.Service.List and WatchWorkspaces, and the README a prompt
// embeds).
func (g *Server) neededScopes(msg mcpedge.Message) []string {
	switch msg.Method {
	case "tools/call":
		return g.tools.Scopes(msg.Params.Name)
	case "resources/read", "resources/subscribe":
		return resources.URIScopes(msg.Params.URI)
	case "subscriptions/listen":
		var need []string
		for _, uri := range msg.Params.Notifications.ResourceSubscriptions {
			for _, s := range resources.URIScopes(uri) {
				if !slices.Contains(need, s) {
					need = append(need, s)
				}
			}
		}
		return need
	case "completion/complete":
		ref := msg.Params.Ref
		return resources.CompletionScopes(ref.Type, ref.URI, ref.Name, msg.Params.Argument.Name)
	}
	return nil
}
