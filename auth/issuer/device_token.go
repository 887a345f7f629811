package issuer

import (
	"context"
	"net/http"
	"strings"
	"time"

	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
)

// deviceAuthorization is the RFC 8628 §3.1 device authorization
// endpoint. It checks the client, the scopes and the RFC 8707 resource
// as /authorize does, so a client learns of a bad request before the user
// types anything.
//
// zitadel's op.DeviceAuthorization is not used: it stores the requested
// scopes unchecked, knows no resource parameter, and authenticates
// confidential clients by HTTP Basic only. Its code generators and
// response type are.
func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.tokenError(w, r, oidc.ErrInvalidRequest().WithDescription("use POST"), http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil || r.URL.RawQuery != "" {
		s.tokenError(w, r, oidc.ErrInvalidRequest().WithDescription("send the parameters as a form body"), 0)
		return
	}
	rec, _, e := s.deviceClient(r)
	if e != nil {
		s.tokenError(w, r, e, 0)
		return
	}
	resource, e := s.st.resources.fromForm(r.PostForm)
	if e != nil {
		s.tokenError(w, r, e, 0)
		return
	}
	scopes, e := s.st.authorizeScopes(rec, strings.Fields(r.PostForm.Get("scope")))
	if e != nil {
		s.tokenError(w, r, e, 0)
		return
	}
	deviceCode, d, err := s.st.devices.add(rec.ID, scopes, s.st.resources.orDefault(resource))
	if err != nil {
		s.log.WarnContext(r.Context(), "device authorization: store", "error", err)
		busy := &oidc.Error{ErrorType: "temporarily_unavailable", Description: "too many device sign-ins in progress; try again in a few minutes"}
		s.tokenError(w, r, busy, http.StatusServiceUnavailable)
		return
	}
	s.log.InfoContext(r.Context(), "device authorization started", "device_authorization_id", d.ID, "client_id", rec.ID)
	verify := s.cfg.Issuer + pathDevice
	httphelper.MarshalJSON(w, &oidc.DeviceAuthorizationResponse{
		DeviceCode:              deviceCode,
		UserCode:                displayUserCode(d.UserCode),
		VerificationURI:         verify,
		VerificationURIComplete: verify + "?user_code=" + displayUserCode(d.UserCode),
		ExpiresIn:               int(deviceCodeTTL / time.Second),
		Interval:                int(d.Interval / time.Second),
	})
}

// deviceClient authenticates the client of a device flow request: by
// client_id for a public client, by HTTP Basic or client_secret_post for
// a confidential one. The client must have registered the device grant.
func (s *Server) deviceClient(r *http.Request) (auth.ClientRecord, op.Client, *oidc.Error) {
	id, basic, err := op.ClientIDFromRequest(r, s.provider)
	if err != nil {
		return auth.ClientRecord{}, nil, oidc.ErrInvalidClient().WithDescription("client authentication failed").WithParent(err)
	}
	rec, err := s.st.clients.lookup(r.Context(), id)
	if err != nil {
		return auth.ClientRecord{}, nil, oidc.ErrInvalidClient().WithDescription("unknown client").WithParent(err)
	}
	if rec.SecretHash != "" && !basic {
		// client_secret_post: op.ClientIDFromRequest checks Basic only.
		if err := checkSecret(rec, r.PostForm.Get("client_secret")); err != nil {
			return auth.ClientRecord{}, nil, oidc.ErrInvalidClient().WithDescription("invalid client_id / client_secret").WithParent(err)
		}
	}
	if !hasGrant(rec, auth.GrantDeviceCode) {
		return auth.ClientRecord{}, nil, oidc.ErrUnauthorizedClient().WithDescription(
			"client is not registered for the device code grant; register it with grant_types including %q", auth.GrantDeviceCode)
	}
	return rec, s.st.opClient(rec), nil
}

// exchangeDevice is a token request with a device code (RFC 8628 §3.4).
// The resource, when sent, must be the one the device authorization was
// for. A redeemed code presented again revokes the refresh tokens issued
// from it, as a replayed authorization code does.
func (s *Server) exchangeDevice(ctx context.Context, r *http.Request, resource string) (*oidc.AccessTokenResponse, error) {
	rec, client, e := s.deviceClient(r)
	if e != nil {
		return nil, e
	}
	code := r.PostForm.Get("device_code")
	if code == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("device_code missing")
	}
	d, e := s.st.devices.poll(code, rec.ID, resource)
	if e != nil {
		if d.ID != "" {
			s.log.WarnContext(ctx, "device code replayed; revoking its grant", "device_authorization_id", d.ID, "client_id", rec.ID)
			if err := s.st.revokeFamily(d.ID); err != nil {
				return nil, err
			}
		}
		return nil, e
	}
	s.log.InfoContext(ctx, "device authorization redeemed", "device_authorization_id", d.ID, "client_id", rec.ID, "user", d.Subject)
	withRefresh := op.ValidateGrantType(client, oidc.GrantTypeRefreshToken)
	return s.issue(ctx, &deviceGrant{d: d}, client, withRefresh, "", "")
}

// deviceGrant is a redeemed device authorization.
type deviceGrant struct{ d deviceAuthz }

func (g *deviceGrant) GetSubject() string    { return g.d.Subject }
func (g *deviceGrant) GetAudience() []string { return []string{g.d.Resource} }
func (g *deviceGrant) GetScopes() []string   { return g.d.Scopes }
func (g *deviceGrant) GetClientID() string   { return g.d.ClientID }
func (g *deviceGrant) tenantID() string      { return g.d.Tenant }

// deviceIDToken gives a device grant's ID token the client as audience.
type deviceIDToken struct{ *deviceGrant }

func (v deviceIDToken) GetAudience() []string  { return []string{v.d.ClientID} }
func (v deviceIDToken) GetAMR() []string       { return []string{"pwd"} }
func (v deviceIDToken) GetAuthTime() time.Time { return v.d.AuthTime }
