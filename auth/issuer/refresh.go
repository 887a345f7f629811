package issuer

import (
	"slices"
	"time"
)

const refreshFile = "refresh_tokens.json"

// refreshDoc is refresh_tokens.json. Tokens are keyed by the SHA-256 of
// the token: the file never holds a usable token. Refresh tokens are 256
// random bits, so an unsalted fast hash is enough (unlike passwords).
type refreshDoc struct {
	Tokens map[string]refreshRecord `json:"tokens"`
}

// refreshRecord is one refresh token. Every token of one authorization
// shares a Family (the authorization request ID); rotation marks the
// presented token Used and adds its successor to the family. Presenting a
// used token again means two parties hold the family, so the whole family
// is revoked (RFC 9700 §4.14.2).
type refreshRecord struct {
	Family    string    `json:"family"`
	ClientID  string    `json:"client_id"`
	Subject   string    `json:"sub"`
	Resource  string    `json:"resource"`
	Scopes    []string  `json:"scopes"` // of the grant; a refresh may narrow one token's scopes, not these
	AuthTime  time.Time `json:"auth_time"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	UsedAt    time.Time `json:"used_at,omitzero"`
}

// refreshGrant is a validated refresh token request. zitadel narrows its
// scopes through SetCurrentScopes; the record keeps the grant's scopes.
type refreshGrant struct {
	tokenID string // digest of the presented token
	rec     refreshRecord
	scopes  []string
	tenant  string
}

func (g *refreshGrant) GetAMR() []string            { return []string{"pwd"} }
func (g *refreshGrant) GetAudience() []string       { return []string{g.rec.Resource} }
func (g *refreshGrant) GetAuthTime() time.Time      { return g.rec.AuthTime }
func (g *refreshGrant) GetClientID() string         { return g.rec.ClientID }
func (g *refreshGrant) GetScopes() []string         { return g.scopes }
func (g *refreshGrant) GetSubject() string          { return g.rec.Subject }
func (g *refreshGrant) SetCurrentScopes(s []string) { g.scopes = slices.Clone(s) }
func (g *refreshGrant) tenantID() string            { return g.tenant }

// pruneExpired drops records past their expiry, used or not: an expired
// token is refused anyway, so its reuse no longer needs detecting.
func (d *refreshDoc) pruneExpired(now time.Time) {
	for k, r := range d.Tokens {
		if now.After(r.ExpiresAt) {
			delete(d.Tokens, k)
		}
	}
}

// revokeFamily deletes every token of family.
func (d *refreshDoc) revokeFamily(family string) {
	for k, r := range d.Tokens {
		if r.Family == family {
			delete(d.Tokens, k)
		}
	}
}

// revokeFamily revokes every refresh token of one authorization.
func (s *storage) revokeFamily(family string) error {
	return s.refresh.Update(func(d *refreshDoc) error {
		d.revokeFamily(family)
		return nil
	})
}
