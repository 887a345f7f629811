package gateway

import (
	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
)

// LocalPrincipal is the single identity used while authentication is off;
// the gateway then listens on loopback only.
var LocalPrincipal = identity.Identity{Issuer: "local", Subject: "local", Tenant: "local", Scopes: auth.AllScopes}
