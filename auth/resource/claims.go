package resource

import (
	"math"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// identityFromClaims builds an Identity from the claims of a verified JWT or
// an active introspection response; both use the same claim names (RFC 9068,
// RFC 7662). Signature, issuer, audience and time checks have already been
// done by the caller.
func identityFromClaims(claims map[string]any, tenantClaim string) (identity.Identity, error) {
	sub, _ := claims["sub"].(string)
	if sub == "" {
		// Sessions and sandboxes are bound to (issuer, subject); a token
		// without a subject cannot own anything.
		return identity.Identity{}, invalid("token has no sub claim")
	}
	id := identity.Identity{
		Subject:  sub,
		Tenant:   sub,
		ClientID: firstString(claims, "client_id", "azp"),
		Scopes:   scopes(claims),
		Audience: stringList(claims["aud"]),
	}
	id.Issuer, _ = claims["iss"].(string)
	if exp, ok := numericDate(claims["exp"]); ok {
		id.ExpiresAt = exp
	}
	if iat, ok := numericDate(claims["iat"]); ok {
		id.IssuedAt = iat
	}
	if tenantClaim != "" && tenantClaim != "sub" {
		// No fallback to sub: a deployment that names a tenant claim
		// relies on it for isolation, and silently using sub would put
		// a misissued token in a tenant of its own.
		tenant, _ := claims[tenantClaim].(string)
		if tenant == "" {
			return identity.Identity{}, invalid("token has no " + tenantClaim + " claim")
		}
		id.Tenant = tenant
	}
	return id, nil
}

// scopes reads "scope" (RFC 9068/8693: one space-separated string) or, from
// issuers that use it, "scp" (an array or a string).
func scopes(claims map[string]any) []string {
	for _, name := range []string{"scope", "scp"} {
		switch v := claims[name].(type) {
		case string:
			return strings.Fields(v)
		case []any:
			return stringList(v)
		}
	}
	return nil
}

// stringList accepts a string or an array of strings, the two forms "aud"
// takes; other element types are dropped.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil
		}
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func firstString(claims map[string]any, names ...string) string {
	for _, n := range names {
		if s, ok := claims[n].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// numericDate reads a JSON number of seconds since the epoch.
func numericDate(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}
