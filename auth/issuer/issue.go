package issuer

import (
	"context"
	"fmt"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/crypto"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// accessTokenType is the JWS typ of access tokens (RFC 9068 §2.1). ID
// tokens keep zitadel's "JWT", so a resource server can tell them apart.
const accessTokenType = "at+jwt"

// grant is what every validated token request becomes: a subject, one
// audience (the resource), scopes, a client and a tenant.
type grant interface {
	op.TokenRequest
	GetClientID() string
	tenantID() string
}

var (
	_ grant = (*authRequest)(nil)
	_ grant = (*refreshGrant)(nil)
	_ grant = (*clientGrant)(nil)
	_ grant = (*deviceGrant)(nil)
)

// issue mints the token response for a validated grant. It replaces
// zitadel's op.CreateTokenResponse, which would always add an ID token
// whose aud is the grant's audience: here that is the gateway, which
// would make the ID token a second bearer token for it. We issue an ID
// token only for the openid scope, with the client as audience.
func (s *Server) issue(ctx context.Context, g grant, client op.Client, withRefresh bool, currentRefresh, code string) (*oidc.AccessTokenResponse, error) {
	var (
		jti, refresh string
		exp          time.Time
		err          error
	)
	if withRefresh {
		jti, refresh, exp, err = s.st.CreateAccessAndRefreshTokens(ctx, g, currentRefresh)
	} else {
		jti, exp, err = s.st.CreateAccessToken(ctx, g)
	}
	if err != nil {
		return nil, err
	}
	at, err := s.signAccessToken(ctx, g, jti, exp)
	if err != nil {
		return nil, err
	}
	resp := &oidc.AccessTokenResponse{
		AccessToken:  at,
		TokenType:    oidc.BearerToken,
		RefreshToken: refresh,
		ExpiresIn:    uint64(time.Until(exp).Round(time.Second).Seconds()),
		Scope:        g.GetScopes(),
	}
	if !slices.Contains(g.GetScopes(), oidc.ScopeOpenID) {
		return resp, nil
	}
	var idReq op.IDTokenRequest
	switch g := g.(type) {
	case *authRequest:
		idReq = authIDToken{g}
	case *refreshGrant:
		idReq = refreshIDToken{g}
	case *deviceGrant:
		idReq = deviceIDToken{g}
	default:
		return resp, nil
	}
	resp.IDToken, err = op.CreateIDToken(ctx, s.cfg.Issuer, idReq, client.IDTokenLifetime(), at, code, s.st, client)
	if err != nil {
		return nil, fmt.Errorf("create ID token: %w", err)
	}
	return resp, nil
}

// signAccessToken signs the RFC 9068 access token: iss, sub, aud (the
// resource), exp, iat, nbf, jti, client_id, scope and tenant.
func (s *Server) signAccessToken(ctx context.Context, g grant, jti string, exp time.Time) (string, error) {
	key, err := s.st.SigningKey(ctx)
	if err != nil {
		return "", err
	}
	claims := oidc.NewAccessTokenClaims(s.cfg.Issuer, g.GetSubject(), g.GetAudience(), exp, jti, g.GetClientID(), 0)
	claims.Scopes = gatewayScopes(g.GetScopes())
	claims.Claims = map[string]any{"tenant": g.tenantID()}
	signer, err := jose.NewSigner(jose.SigningKey{
		Algorithm: key.SignatureAlgorithm(),
		Key:       &jose.JSONWebKey{Key: key.Key(), KeyID: key.ID()},
	}, (&jose.SignerOptions{}).WithType(accessTokenType))
	if err != nil {
		return "", fmt.Errorf("access token signer: %w", err)
	}
	token, err := crypto.Sign(claims, signer)
	if err != nil {
		return "", fmt.Errorf("sign access token: %w", err)
	}
	return token, nil
}

// authIDToken and refreshIDToken give an ID token the client as its
// audience (OpenID Connect Core §2); everything else is the grant's.
type authIDToken struct{ *authRequest }

func (v authIDToken) GetAudience() []string { return []string{v.ClientID} }

type refreshIDToken struct{ *refreshGrant }

func (v refreshIDToken) GetAudience() []string { return []string{v.rec.ClientID} }
