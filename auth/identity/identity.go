// Package identity holds the one type that says who is calling: the
// identity a verified token or API key yields, the principal a tool call
// runs as, and the principal an audit record names are the same value.
// It never holds a token, and it imports nothing of the project, so auth,
// the gateway and the audit log can all share it.
package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Identity is who is calling: an (issuer, subject) pair, the tenant its
// quotas count against, the OAuth client that called, and what the token
// granted. The JSON form is the "principal" member of an audit record;
// the token facts that only the verifier needs (audience and times) are
// left out of it.
type Identity struct {
	Issuer   string   `json:"issuer,omitempty"`
	Subject  string   `json:"subject,omitempty"`
	Tenant   string   `json:"tenant,omitempty"` // from the configured tenant claim; Subject by default
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`

	Audience  []string  `json:"-"`
	IssuedAt  time.Time `json:"-"` // zero when the token has no iat
	ExpiresAt time.Time `json:"-"`
}

// HasScope reports whether the identity was granted scope.
func (id Identity) HasScope(scope string) bool {
	for _, s := range id.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Digest is the owner label stored on sandboxes: stable for one
// (issuer, subject), and revealing nothing of it to someone who reads
// labels.
func (id Identity) Digest() string {
	sum := sha256.Sum256([]byte(id.Issuer + "\x00" + id.Subject))
	return hex.EncodeToString(sum[:16])
}

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the identity in ctx and whether there is one.
func From(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(key{}).(Identity)
	return id, ok
}
