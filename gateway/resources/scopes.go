package resources

import (
	"slices"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
)

// completionScopes are the scopes completing argument of the resource
// template or prompt (refType "ref/resource" or "ref/prompt") needs:
// those of reading what the completion lists.
func CompletionScopes(refType, uri, prompt, argument string) []string {
	switch {
	case refType == "ref/resource" && strings.HasPrefix(uri, sandboxScheme+"://"):
		return []string{auth.ScopeFilesRead}
	case refType == "ref/prompt" && prompt == promptRunTests && argument == "repo":
		return []string{auth.ScopeFilesRead}
	}
	return nil
}

// uriScopes are the scopes reading uri needs.
func URIScopes(uri string) []string {
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
