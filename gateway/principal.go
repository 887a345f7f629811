package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
)

// Principal is who is calling: an (issuer, subject) pair and what the
// token granted. It never holds the token itself.
type Principal struct {
	Issuer   string
	Subject  string
	Tenant   string
	ClientID string
	Scopes   []string
}

// LocalPrincipal is the single identity used while authentication is off;
// the gateway then listens on loopback only.
var LocalPrincipal = Principal{Issuer: "local", Subject: "local", Tenant: "local", Scopes: auth.AllScopes}

// Digest is the owner label stored on containers: stable for one principal,
// and revealing nothing of it to someone who reads labels.
func (p Principal) Digest() string {
	sum := sha256.Sum256([]byte(p.Issuer + "\x00" + p.Subject))
	return hex.EncodeToString(sum[:16])
}

func (p Principal) audit() audit.Principal {
	return audit.Principal{Issuer: p.Issuer, Subject: p.Subject, Tenant: p.Tenant, ClientID: p.ClientID, Scopes: p.Scopes}
}

// PrincipalFor is the principal of a verified identity: an OAuth token's
// or an API key's (auth/apikey).
func PrincipalFor(id auth.Identity) Principal {
	return Principal{Issuer: id.Issuer, Subject: id.Subject, Tenant: id.Tenant, ClientID: id.ClientID, Scopes: id.Scopes}
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx and whether there is one.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
