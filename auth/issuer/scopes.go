package issuer

import (
	"slices"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/sandgate/sandgate/auth"
)

// scopeWords says on the consent page what each scope lets the
// application do.
var scopeWords = map[string]string{
	auth.ScopeFilesRead:     "Read files in your sandboxes",
	auth.ScopeFilesWrite:    "Create, change and delete files in your sandboxes",
	auth.ScopeExec:          "Run commands and code in your sandboxes",
	auth.ScopeBrowser:       "Drive a web browser inside your sandboxes",
	auth.ScopeAudit:         "Read the audit log of your activity",
	oidc.ScopeOpenID:        "Learn your user name",
	oidc.ScopeOfflineAccess: "Stay signed in when you are not using it",
}

// describeScope returns the words for scope, or the scope itself.
func describeScope(scope string) string {
	if w, ok := scopeWords[scope]; ok {
		return w
	}
	return scope
}

// isProtocolScope reports whether scope is about the OAuth/OIDC protocol
// rather than the gateway: it is always accepted and never appears in an
// access token's scope claim.
func isProtocolScope(scope string) bool { return auth.IsProtocolScope(scope) }

// grantable returns the gateway scopes rec may be granted: the
// configured scopes, narrowed to the record's list when it has one.
// Static clients always have a list (AddClient requires it).
func (s *storage) grantable(rec auth.ClientRecord) []string {
	if len(rec.Scopes) == 0 {
		if rec.Kind == auth.ClientStatic {
			return nil
		}
		return s.cfg.Scopes
	}
	var out []string
	for _, sc := range rec.Scopes {
		if slices.Contains(s.cfg.Scopes, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// authorizeScopes decides the scopes of an authorization request. No
// gateway scope means every gateway scope the client may have (MCP
// clients often send none, or only offline_access); protocol scopes are
// always granted when asked for. A gateway scope the client may not have
// is refused rather than silently dropped, so the client learns why its
// token lacks it.
func (s *storage) authorizeScopes(rec auth.ClientRecord, requested []string) ([]string, *oidc.Error) {
	allowed := s.grantable(rec)
	var gateway, protocol []string
	for _, sc := range requested {
		switch {
		case isProtocolScope(sc):
			protocol = append(protocol, sc)
		case slices.Contains(allowed, sc):
			gateway = append(gateway, sc)
		default:
			return nil, oidc.ErrInvalidScope().WithDescription("scope %q is not available to this client; it may have: %s",
				sc, strings.Join(append(slices.Clone(allowed), auth.ProtocolScopes...), " "))
		}
	}
	if len(gateway) == 0 {
		gateway = allowed
	}
	if len(gateway) == 0 {
		return nil, oidc.ErrInvalidScope().WithDescription("this client may not be granted any gateway scope")
	}
	return dedupe(append(slices.Clone(gateway), protocol...)), nil
}

// gatewayScopes drops protocol scopes.
func gatewayScopes(scopes []string) []string {
	var out []string
	for _, sc := range scopes {
		if !isProtocolScope(sc) {
			out = append(out, sc)
		}
	}
	return out
}

// dedupe returns scopes without repeats, in first-seen order.
func dedupe(scopes []string) []string {
	out := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}
