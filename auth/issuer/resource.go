package issuer

import (
	"context"
	"net/url"
	"slices"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// resourceSet holds the accepted RFC 8707 resource indicators. zitadel
// does not parse the resource parameter at all, so we read it from the
// form at /authorize and /token ourselves; every access token's aud is
// exactly one of these values.
type resourceSet struct {
	list []string
}

// fromForm returns the resource named in form, "" when none is, or
// invalid_target. At most one resource is accepted: a token carries
// exactly one audience, and a token good for two resources is what
// audience restriction exists to prevent.
func (rs resourceSet) fromForm(form url.Values) (string, *oidc.Error) {
	values := form["resource"]
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", oidc.ErrInvalidTarget().WithDescription("request one resource per token")
	}
	r := values[0]
	if u, err := url.Parse(r); err != nil || !u.IsAbs() || u.Fragment != "" {
		return "", oidc.ErrInvalidTarget().WithDescription("resource must be an absolute URI without a fragment")
	}
	if !slices.Contains(rs.list, r) {
		return "", oidc.ErrInvalidTarget().WithDescription("unknown resource %q; this server issues tokens for %q", r, rs.list[0])
	}
	return r, nil
}

// orDefault returns r, or the default resource when r is empty.
func (rs resourceSet) orDefault(r string) string {
	if r == "" {
		return rs.list[0]
	}
	return r
}

// mustMatch checks a resource sent at the token endpoint against the one
// the grant was made for: a code or refresh token may not be turned into
// a token for another resource.
func mustMatch(requested, granted string) *oidc.Error {
	if requested != "" && requested != granted {
		return oidc.ErrInvalidTarget().WithDescription("this grant is for resource %q", granted)
	}
	return nil
}

type resourceKey struct{}

// withResource carries a validated resource to storage methods that
// zitadel calls without it (ClientCredentialsTokenRequest).
func withResource(ctx context.Context, r string) context.Context {
	return context.WithValue(ctx, resourceKey{}, r)
}

// fromContext returns the resource set by withResource, or the default.
func (rs resourceSet) fromContext(ctx context.Context) string {
	r, _ := ctx.Value(resourceKey{}).(string)
	return rs.orDefault(r)
}
