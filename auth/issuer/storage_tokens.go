package issuer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

const refreshTokenPrefix = "sgr_" // lets secret scanners recognise a leaked token

// CreateAccessToken returns the ID and expiry of a new access token; the
// JWT itself is signed in issue.go.
func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return randomToken(16), time.Now().Add(s.cfg.AccessTokenTTL), nil
}

// CreateAccessAndRefreshTokens starts a refresh token family for an
// authorization code, or rotates the presented refresh token. Rotation is
// checked again under the file lock, so of two concurrent refreshes with
// one token exactly one wins and the other counts as reuse.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	now := time.Now().UTC()
	var next refreshRecord
	switch g := req.(type) {
	case *authRequest:
		next = refreshRecord{Family: g.ID, ClientID: g.ClientID, Subject: g.Subject,
			Resource: g.Resource, Scopes: slices.Clone(g.Scopes), AuthTime: g.AuthTime}
	case *deviceGrant:
		next = refreshRecord{Family: g.d.ID, ClientID: g.d.ClientID, Subject: g.d.Subject,
			Resource: g.d.Resource, Scopes: slices.Clone(g.d.Scopes), AuthTime: g.d.AuthTime}
	case *refreshGrant:
		next = g.rec
		next.UsedAt = time.Time{}
	default:
		return "", "", time.Time{}, fmt.Errorf("refresh tokens are not issued for %T", req)
	}
	next.IssuedAt, next.ExpiresAt = now, now.Add(s.cfg.RefreshTokenTTL)
	token := refreshTokenPrefix + randomToken(32)
	reused := false
	err := s.refresh.Update(func(d *refreshDoc) error {
		if d.Tokens == nil {
			d.Tokens = map[string]refreshRecord{}
		}
		d.pruneExpired(now)
		if current != "" {
			old, ok := d.Tokens[digest(current)]
			switch {
			case !ok:
				return oidc.ErrInvalidGrant().WithDescription("refresh token revoked")
			case !old.UsedAt.IsZero():
				reused = true
				d.revokeFamily(old.Family)
				return nil
			}
			old.UsedAt = now
			d.Tokens[digest(current)] = old
		}
		d.Tokens[digest(token)] = next
		return nil
	})
	if err == nil && reused {
		s.log.WarnContext(ctx, "refresh token reused; revoked its family", "client_id", next.ClientID)
		err = oidc.ErrInvalidGrant().WithDescription("refresh token already used")
	}
	// A replay that raced this redemption may have revoked the family
	// before this token joined it; one of the two sides sees the other.
	if a, ok := req.(*authRequest); ok && err == nil && s.reqs.replayed(a.ID) {
		if err = s.revokeFamily(a.ID); err == nil {
			err = oidc.ErrInvalidGrant().WithDescription("authorization code was already used")
		}
	}
	if g, ok := req.(*deviceGrant); ok && err == nil && s.devices.replayed(g.d.ID) {
		if err = s.revokeFamily(g.d.ID); err == nil {
			err = oidc.ErrInvalidGrant().WithDescription("device_code was already used")
		}
	}
	if err != nil {
		return "", "", time.Time{}, err
	}
	id, exp, _ := s.CreateAccessToken(ctx, req)
	return id, token, exp, nil
}

// TokenRequestByRefreshToken loads a refresh token. A token that was
// already rotated revokes its whole family.
func (s *storage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	d, err := s.refresh.Load()
	if err != nil {
		return nil, err
	}
	id := digest(token)
	rec, ok := d.Tokens[id]
	switch {
	case !ok:
		return nil, errors.New("unknown refresh token")
	case time.Now().After(rec.ExpiresAt):
		return nil, errors.New("refresh token expired")
	case !rec.UsedAt.IsZero():
		s.log.WarnContext(ctx, "refresh token reused; revoking its family", "client_id", rec.ClientID)
		if err := s.revokeFamily(rec.Family); err != nil {
			return nil, err
		}
		return nil, errors.New("refresh token already used; all tokens of this sign-in are revoked")
	}
	// Take the tenant from the user as it is now: a user removed since
	// sign-in can no longer refresh.
	user, ok, err := s.user(rec.Subject)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("user %s no longer exists", rec.Subject)
	}
	return &refreshGrant{tokenID: id, rec: rec, scopes: slices.Clone(rec.Scopes), tenant: user.Tenant}, nil
}

// GetRefreshTokenInfo lets /revoke find a refresh token's family.
func (s *storage) GetRefreshTokenInfo(_ context.Context, clientID, token string) (string, string, error) {
	d, err := s.refresh.Load()
	if err != nil {
		return "", "", err
	}
	rec, ok := d.Tokens[digest(token)]
	if !ok || rec.ClientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return rec.Subject, digest(token), nil
}

// RevokeToken revokes the family of a refresh token (RFC 7009). Access
// tokens are self-contained JWTs that expire within AccessTokenTTL; there
// is nothing to revoke for them here, and RFC 7009 answers 200 anyway.
func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, clientID string) *oidc.Error {
	d, err := s.refresh.Load()
	if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	rec, ok := d.Tokens[tokenOrID]
	if !ok {
		return nil
	}
	if rec.ClientID != clientID {
		return oidc.ErrInvalidClient().WithDescription("token was not issued to this client")
	}
	if err := s.revokeFamily(rec.Family); err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

// TerminateSession implements op.AuthStorage. There are no sessions to
// end: every authorization signs in afresh.
func (s *storage) TerminateSession(context.Context, string, string) error { return nil }
