package issuer

import (
	"context"
	"errors"
	"net/http"

	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// maxFormBytes bounds a token, login or consent request body.
const maxFormBytes = 64 << 10

// token is the token endpoint. zitadel parses and validates each grant
// (client authentication, PKCE verifier, redirect_uri, refresh token
// ownership); we add the resource parameter and mint the response in
// issue. The device code grant is ours (device_token.go). Grants zitadel
// would otherwise offer (JWT bearer, token exchange) are not served.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.tokenError(w, r, oidc.ErrInvalidRequest().WithDescription("use POST"), http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.tokenError(w, r, oidc.ErrInvalidRequest().WithDescription("cannot parse the form body"), 0)
		return
	}
	if r.URL.RawQuery != "" {
		// Secrets and codes in a URL end up in logs.
		s.tokenError(w, r, oidc.ErrInvalidRequest().WithDescription("send token request parameters in the body, not the URL"), 0)
		return
	}
	resource, rerr := s.st.resources.fromForm(r.PostForm)
	if rerr != nil {
		s.tokenError(w, r, rerr, 0)
		return
	}
	ctx := r.Context()
	var resp *oidc.AccessTokenResponse
	var err error
	switch gt := r.PostForm.Get("grant_type"); gt {
	case string(oidc.GrantTypeCode):
		resp, err = s.exchangeCode(ctx, r, resource)
	case string(oidc.GrantTypeRefreshToken):
		resp, err = s.exchangeRefresh(ctx, r, resource)
	case string(oidc.GrantTypeDeviceCode):
		resp, err = s.exchangeDevice(ctx, r, resource)
	case string(oidc.GrantTypeClientCredentials):
		resp, err = s.exchangeClientCredentials(withResource(ctx, resource), r)
	case "":
		err = oidc.ErrInvalidRequest().WithDescription("grant_type missing")
	default:
		err = oidc.ErrUnsupportedGrantType().WithDescription("grant_type %q is not supported", gt)
	}
	if err != nil {
		s.tokenError(w, r, err, 0)
		return
	}
	httphelper.MarshalJSON(w, resp)
}

// exchangeCode redeems an authorization code. zitadel's
// ValidateAccessTokenRequest spends the code (AuthRequestByCode), checks
// the PKCE verifier, authenticates the client and compares redirect_uri.
func (s *Server) exchangeCode(ctx context.Context, r *http.Request, resource string) (*oidc.AccessTokenResponse, error) {
	req, err := op.ParseAccessTokenRequest(r, s.provider.Decoder())
	if err != nil {
		return nil, err
	}
	if req.Code == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("code missing")
	}
	ar, client, err := op.ValidateAccessTokenRequest(ctx, req, s.provider)
	if err != nil {
		return nil, err
	}
	a, ok := ar.(*authRequest)
	if !ok {
		return nil, oidc.ErrServerError()
	}
	if err := mustMatch(resource, a.Resource); err != nil {
		return nil, err
	}
	// Refresh tokens go to every client registered for the grant, not
	// only to those asking offline_access: MCP clients rarely ask for it
	// but expect to refresh, and OAuth 2.1 leaves the choice to us.
	withRefresh := op.ValidateGrantType(client, oidc.GrantTypeRefreshToken)
	return s.issue(ctx, a, client, withRefresh, "", req.Code)
}

// exchangeRefresh rotates a refresh token.
func (s *Server) exchangeRefresh(ctx context.Context, r *http.Request, resource string) (*oidc.AccessTokenResponse, error) {
	req, err := op.ParseRefreshTokenRequest(r, s.provider.Decoder())
	if err != nil {
		return nil, err
	}
	rr, client, err := op.ValidateRefreshTokenRequest(ctx, req, s.provider)
	if err != nil {
		return nil, err
	}
	g, ok := rr.(*refreshGrant)
	if !ok {
		return nil, oidc.ErrServerError()
	}
	if err := mustMatch(resource, g.rec.Resource); err != nil {
		return nil, err
	}
	return s.issue(ctx, g, client, true, req.RefreshToken, "")
}

// exchangeClientCredentials serves static clients acting for themselves;
// the resource travels in ctx to ClientCredentialsTokenRequest.
func (s *Server) exchangeClientCredentials(ctx context.Context, r *http.Request) (*oidc.AccessTokenResponse, error) {
	req, err := op.ParseClientCredentialsRequest(r, s.provider.Decoder())
	if err != nil {
		return nil, err
	}
	tr, client, err := op.ValidateClientCredentialsRequest(ctx, req, s.provider)
	if err != nil {
		return nil, err
	}
	g, ok := tr.(*clientGrant)
	if !ok {
		return nil, oidc.ErrServerError()
	}
	return s.issue(ctx, g, client, false, "", "")
}

// tokenError writes an RFC 6749 §5.2 error. Errors that are not OAuth
// errors are logged and reported as a bare server_error: their text may
// name files or internals.
func (s *Server) tokenError(w http.ResponseWriter, r *http.Request, err error, status int) {
	var e *oidc.Error
	if !errors.As(err, &e) {
		s.log.ErrorContext(r.Context(), "token endpoint", "error", err)
		e = oidc.ErrServerError().WithDescription("internal error")
	}
	if status == 0 {
		status = http.StatusBadRequest
		switch e.ErrorType {
		case oidc.InvalidClient:
			status = http.StatusUnauthorized
			if r.Header.Get("Authorization") != "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="sandgate"`)
			}
		case oidc.ServerError:
			status = http.StatusInternalServerError
		}
	}
	switch e.ErrorType {
	case oidc.ServerError:
	case oidc.AuthorizationPending, oidc.SlowDown:
		// A waiting device polls every few seconds: not news.
		s.log.DebugContext(r.Context(), "device token request pending", "error", e.ErrorType)
	default:
		// Descriptions and parents name clients and reasons, never secrets.
		s.log.InfoContext(r.Context(), "token request refused", "error", err.Error())
	}
	httphelper.MarshalJSONWithStatus(w, e, status)
}
