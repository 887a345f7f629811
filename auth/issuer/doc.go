// Package issuer is Sandgate's embedded OAuth 2.1 authorization server,
// built on zitadel/oidc's op package with its own storage. The gateway
// mounts Handler at the same origin as /mcp and verifies the access
// tokens with PublicKeys (an auth.KeySource), so one binary is both the
// authorization server and the protected resource.
//
// Endpoints (Routes): /authorize, /login, /consent, /token, /revoke,
// /jwks, /register (when DCR is on), /device_authorization and /device
// (RFC 8628), and the metadata documents at
// /.well-known/oauth-authorization-server and
// /.well-known/openid-configuration.
//
// Grants: authorization code with PKCE S256 (required of every client,
// confidential ones too), refresh token with rotation and reuse
// detection, client_credentials for clients made by AddClient, and the
// device authorization grant for clients that registered it (command-line
// agents without a browser): the user types the code at /device, then
// signs in and consents on the same pages as the code flow.
//
// Clients come in three kinds: static (AddClient; confidential), dynamic
// (RFC 7591 registration through Config.RegisterHandler, stored here),
// and metadata (the client_id is an https URL whose client ID metadata
// document Config.ClientFetcher fetches; always public).
//
// Decisions worth knowing:
//
//   - Redirect URIs match exactly. The only leeway is the port of an http
//     loopback IP literal redirect (RFC 8252 §7.3); see checkRedirectURI.
//   - Every access token is an RFC 9068 JWT (typ at+jwt, ES256) whose aud
//     is exactly one RFC 8707 resource from Config.Resources, never the
//     client. It carries scope and tenant (the user's tenant, or the
//     client ID for client_credentials).
//   - ID tokens are issued only for the openid scope, with the client as
//     audience, so they are never bearer tokens for the gateway.
//   - Every authorization response, success or error, carries iss
//     (RFC 9207) and the client's state.
//   - There are no sign-in sessions: every authorization asks for the
//     password. Logins and consents are bound to the browser by a cookie
//     and HMAC form tokens; failed logins are rate-limited.
//
// State directory (Config.Dir, 0700; files 0600):
//
//	keys.json            signing keys (private JWKs), current and retired
//	clients.json         static and dynamic clients (secrets bcrypt-hashed)
//	users.json           users (passwords bcrypt-hashed) and their tenants
//	refresh_tokens.json  refresh tokens, by SHA-256 only
//	*.lock               flock files that serialise writers
//
// The operator functions (AddClient, AddUser, RotateKeys, EnsureDevUser)
// work on the directory while a server runs: writers hold an flock and
// replace files atomically, and the server re-reads a file when it
// changed. Authorization requests, codes and device authorizations live
// in memory only (device codes by their SHA-256).
package issuer
