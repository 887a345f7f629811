package apikey

import (
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// Issuer is the identity.Identity issuer of every API key principal. It keeps
// their (issuer, subject) pairs apart from those of OAuth tokens.
const Issuer = "sandgate:apikey"

// Record describes one API key. It never holds the key nor its hash.
type Record struct {
	// ID names the key in `gateway apikey list` and revoke, and is the
	// subject of its identity. It is random and says nothing of the key.
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"` // an operator's label
	Tenant    string    `json:"tenant"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"` // zero while the key is live
}

// Revoked reports whether the key was revoked.
func (r Record) Revoked() bool { return !r.RevokedAt.IsZero() }

// Identity is the principal the key stands for, in the form the gateway
// already uses for OAuth tokens. An API key does not expire, so ExpiresAt
// is zero; it has no audience.
func (r Record) Identity() identity.Identity {
	client := r.Name
	if client == "" {
		client = r.ID
	}
	return identity.Identity{
		Issuer:   Issuer,
		Subject:  r.ID,
		Tenant:   r.Tenant,
		ClientID: "apikey:" + client,
		Scopes:   append([]string(nil), r.Scopes...),
	}
}
