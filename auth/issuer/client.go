package issuer

import (
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
)

// opClient presents an auth.ClientRecord to zitadel as an op.Client.
type opClient struct {
	rec       auth.ClientRecord
	grantable []string
	idTTL     time.Duration
	loginURL  string
}

var _ op.Client = (*opClient)(nil)

func (s *storage) opClient(rec auth.ClientRecord) *opClient {
	return &opClient{
		rec:       rec,
		grantable: s.grantable(rec),
		idTTL:     s.cfg.AccessTokenTTL,
		loginURL:  s.cfg.Issuer + "/login?id=",
	}
}

func (c *opClient) GetID() string                    { return c.rec.ID }
func (c *opClient) RedirectURIs() []string           { return c.rec.RedirectURIs }
func (c *opClient) PostLogoutRedirectURIs() []string { return nil }

// ApplicationType is web for every client: redirect URIs are checked by
// our own policy (redirect.go), not zitadel's per-type rules.
func (c *opClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }

// AuthMethod maps the record's token endpoint auth method. A record
// without one is confidential exactly when it has a secret.
func (c *opClient) AuthMethod() oidc.AuthMethod {
	switch c.rec.AuthMethod {
	case auth.AuthMethodNone:
		return oidc.AuthMethodNone
	case auth.AuthMethodBasic:
		return oidc.AuthMethodBasic
	case auth.AuthMethodPost:
		return oidc.AuthMethodPost
	case "":
		if c.rec.SecretHash != "" {
			return oidc.AuthMethodBasic
		}
		return oidc.AuthMethodNone
	}
	// Anything else (private_key_jwt, ...) we cannot check: it will
	// fail the secret check rather than pass as public.
	return oidc.AuthMethod(c.rec.AuthMethod)
}

func (c *opClient) ResponseTypes() []oidc.ResponseType {
	if slices.Contains(c.rec.GrantTypes, auth.GrantAuthCode) {
		return []oidc.ResponseType{oidc.ResponseTypeCode}
	}
	return nil
}

func (c *opClient) GrantTypes() []oidc.GrantType {
	var out []oidc.GrantType
	for _, g := range c.rec.GrantTypes {
		switch g {
		case auth.GrantAuthCode:
			out = append(out, oidc.GrantTypeCode)
		case auth.GrantRefresh:
			out = append(out, oidc.GrantTypeRefreshToken)
		case auth.GrantClientCreds:
			out = append(out, oidc.GrantTypeClientCredentials)
		}
	}
	return out
}

func (c *opClient) LoginURL(id string) string            { return c.loginURL + url.QueryEscape(id) }
func (c *opClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *opClient) IDTokenLifetime() time.Duration       { return c.idTTL }
func (c *opClient) DevMode() bool                        { return false }
func (c *opClient) IsScopeAllowed(scope string) bool     { return slices.Contains(c.grantable, scope) }
func (c *opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *opClient) ClockSkew() time.Duration             { return 0 }

func (c *opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// hasGrant reports whether the client registered grant.
func hasGrant(rec auth.ClientRecord, grant string) bool {
	return slices.Contains(rec.GrantTypes, grant)
}
