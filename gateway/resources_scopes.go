package gateway

import (
	"slices"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/mcpedge"
)

// neededScopes returns the scopes a request needs: a tools/call its
// tool's; reading or subscribing to a resource (resources/subscribe, or
// the resourceSubscriptions of a 2026-07-28 subscriptions/listen), and
// completing a file path, what reading it with the tools needs
// (sandbox:files:read for sandbox files, sandbox:audit for the audit
// records). Every other method needs none: listing is open to any valid
// token, and what a list shows is filtered by scope instead (see
// listResources, listen, embedReadme).
func (g *Server) neededScopes(msg mcpedge.Message) []string {
	switch msg.Method {
	case "tools/call":
		return g.tools.Scopes(msg.Params.Name)
	case "resources/read", "resources/subscribe":
		return uriScopes(msg.Params.URI)
	case "subscriptions/listen":
		var need []string
		for _, uri := range msg.Params.Notifications.ResourceSubscriptions {
			for _, s := range uriScopes(uri) {
				if !slices.Contains(need, s) {
					need = append(need, s)
				}
			}
		}
		return need
	case "completion/complete":
		ref := msg.Params.Ref
		switch {
		case ref.Type == "ref/resource" && strings.HasPrefix(ref.URI, sandboxScheme+"://"):
			return []string{auth.ScopeFilesRead}
		case ref.Type == "ref/prompt" && ref.Name == promptRunTests && msg.Params.Argument.Name == "repo":
			return []string{auth.ScopeFilesRead}
		}
	}
	return nil
}

// uriScopes are the scopes reading uri needs.
func uriScopes(uri string) []string {
	switch {
	case strings.HasPrefix(uri, sandboxScheme+"://"):
		return []string{auth.ScopeFilesRead}
	case strings.HasPrefix(uri, "audit://"):
		return []string{auth.ScopeAudit}
	}
	return nil
}

// hasScopes reports whether p holds every scope in need. With
// authentication off p is LocalPrincipal, which holds them all.
func hasScopes(p identity.Identity, need []string) bool {
	for _, s := range need {
		if !slices.Contains(p.Scopes, s) {
			return false
		}
	}
	return true
}
