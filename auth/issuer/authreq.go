package issuer

import (
	"log/slog"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequest is one authorization in progress: created at /authorize,
// given a user at /login, approved at /consent, redeemed at /token. It
// lives in memory only; a restart asks the user to start again.
type authRequest struct {
	ID          string
	ClientID    string
	RedirectURI string
	State       string
	Nonce       string
	Challenge   string // S256 code challenge; checkPKCE guarantees one
	Resource    string // the RFC 8707 resource, the access token's aud
	Scopes      []string
	CreatedAt   time.Time

	// Set by a successful login.
	Subject  string
	Tenant   string
	AuthTime time.Time
	Browser  string // digest of the CSRF cookie of the browser that signed in

	// Set by consent.
	Approved bool

	// Set for a device sign-in (/device): the device authorization the
	// answer goes to, and its user code as shown. RedirectURI, State and
	// Challenge are empty: the answer goes to no redirect.
	DeviceID string
	UserCode string
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string       { return a.ID }
func (a *authRequest) GetACR() string      { return "" }
func (a *authRequest) GetClientID() string { return a.ClientID }
func (a *authRequest) GetNonce() string    { return a.Nonce }
func (a *authRequest) GetState() string    { return a.State }
func (a *authRequest) GetSubject() string  { return a.Subject }
func (a *authRequest) Done() bool          { return a.Approved }
func (a *authRequest) GetScopes() []string { return a.Scopes }
func (a *authRequest) GetAuthTime() time.Time {
	return a.AuthTime
}
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return oidc.ResponseTypeCode }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return oidc.ResponseModeQuery }
func (a *authRequest) tenantID() string                   { return a.Tenant }

// GetAudience is the resource, never the client: the access token is for
// the gateway. ID tokens get the client as audience through idTokenView.
func (a *authRequest) GetAudience() []string { return []string{a.Resource} }

func (a *authRequest) GetAMR() []string {
	if a.Subject != "" {
		return []string{"pwd"}
	}
	return nil
}

func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.Challenge, Method: oidc.CodeChallengeMethodS256}
}

// LogValue keeps state, nonce and challenge out of logs.
func (a *authRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("auth_request_id", a.ID),
		slog.String("client_id", a.ClientID),
		slog.String("redirect_uri", a.RedirectURI),
		slog.String("resource", a.Resource),
		slog.Any("scopes", a.Scopes),
	)
}

// clone returns a copy the caller may keep while the store changes the
// original.
func (a *authRequest) clone() *authRequest {
	c := *a
	c.Scopes = slices.Clone(a.Scopes)
	return &c
}
