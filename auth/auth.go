package auth

import (
	"context"
	"crypto"
	"errors"
	"time"
)

// Scopes guarding the tool categories.
const (
	ScopeFilesRead  = "sandbox:files:read"
	ScopeFilesWrite = "sandbox:files:write"
	ScopeExec       = "sandbox:exec"
	ScopeBrowser    = "sandbox:browser"
	ScopeAudit      = "sandbox:audit"
)

// AllScopes lists every scope a token for the gateway may carry.
var AllScopes = []string{ScopeFilesRead, ScopeFilesWrite, ScopeExec, ScopeBrowser, ScopeAudit}

// Protocol scopes are about OAuth and OpenID Connect, not the gateway:
// openid asks for an ID token, offline_access for a refresh token. The
// embedded issuer advertises both, so every client may register and ask
// for them; no access token carries them.
const (
	ScopeOpenID        = "openid"
	ScopeOfflineAccess = "offline_access"
)

// ProtocolScopes lists the protocol scopes.
var ProtocolScopes = []string{ScopeOpenID, ScopeOfflineAccess}

// IsProtocolScope reports whether scope is a protocol scope.
func IsProtocolScope(scope string) bool {
	return scope == ScopeOpenID || scope == ScopeOfflineAccess
}

// Error categories; wrap them with detail.
var (
	// ErrInvalidToken: the token is missing, malformed, expired, for
	// another audience or issuer, or signed with a key or algorithm we do
	// not accept.
	ErrInvalidToken = errors.New("invalid token")
	// ErrClientNotFound: no such registered client.
	ErrClientNotFound = errors.New("client not found")
	// ErrInvalidClientMetadata: a registration request or client metadata
	// document is unacceptable; the wrapped message says why.
	ErrInvalidClientMetadata = errors.New("invalid client metadata")
)

// Client kinds: how a client came to be known.
const (
	ClientStatic   = "static"   // created by `gateway client add` or configuration
	ClientDynamic  = "dynamic"  // registered at /register (RFC 7591)
	ClientMetadata = "metadata" // client_id is the URL of a client ID metadata document
)

// Token endpoint authentication methods.
const (
	AuthMethodNone   = "none" // public client; PKCE is its only proof
	AuthMethodBasic  = "client_secret_basic"
	AuthMethodPost   = "client_secret_post"
	GrantAuthCode    = "authorization_code"
	GrantRefresh     = "refresh_token"
	GrantClientCreds = "client_credentials"
	// GrantDeviceCode is the device authorization grant (RFC 8628), for
	// command-line agents on machines without a browser.
	GrantDeviceCode = "urn:ietf:params:oauth:grant-type:device_code"
)

// ClientRecord is a registered OAuth client of the embedded authorization
// server.
type ClientRecord struct {
	ID   string `json:"client_id"`
	Kind string `json:"kind"`
	Name string `json:"client_name,omitempty"`
	// SecretHash is the bcrypt hash of the client secret; empty for
	// public clients. The secret itself is never stored.
	SecretHash   string    `json:"secret_hash,omitempty"`
	RedirectURIs []string  `json:"redirect_uris,omitempty"`
	GrantTypes   []string  `json:"grant_types"`
	AuthMethod   string    `json:"token_endpoint_auth_method"`
	Scopes       []string  `json:"scopes"` // scopes the client may be granted
	CreatedAt    time.Time `json:"created_at"`
	// MetadataURL and FetchedAt describe a ClientMetadata client.
	MetadataURL string    `json:"metadata_url,omitempty"`
	FetchedAt   time.Time `json:"fetched_at,omitempty"`
	// ClientURI and LogoURI are shown on the consent page only as text.
	ClientURI string `json:"client_uri,omitempty"`
}

// ClientStore keeps client records.
type ClientStore interface {
	// PutClient stores c, replacing a record with the same ID.
	PutClient(ctx context.Context, c ClientRecord) error
	// GetClient returns the client with the given ID or ErrClientNotFound.
	GetClient(ctx context.Context, id string) (ClientRecord, error)
}

// PublicKey is one token verification key.
type PublicKey struct {
	ID        string // the JWS "kid"
	Algorithm string // RS256, ES256 or EdDSA
	Key       crypto.PublicKey
}

// RevocationSource reports whether the tokens an issuer gave a client
// were revoked (`gateway client revoke`). The embedded issuer implements
// it, so its JWT access tokens stop at the revocation rather than at
// their expiry.
type RevocationSource interface {
	// ClientRevoked reports whether a token issued to clientID at
	// issuedAt is revoked. An error means it could not be checked.
	ClientRevoked(ctx context.Context, clientID string, issuedAt time.Time) (bool, error)
}

// KeySource yields the keys an issuer signs access tokens with. The
// embedded issuer implements it so the gateway can verify its tokens
// without an HTTP round trip to itself.
type KeySource interface {
	PublicKeys(ctx context.Context) ([]PublicKey, error)
}
