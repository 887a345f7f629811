// Package auth holds what the OAuth 2.1 pieces of Sandgate share: the
// scopes that guard tool that guard tool
// categories, registered client records, and error categories.
//
// Subpackages:
//   - auth/identity: who is calling (identity.Identity), shared with the gateway
//     and the audit record;
//   - auth/resource: the gateway as a protected resource (RFC 9728
//     metadata, bearer token verification, WWW-Authenticate challenges);
//   - auth/issuer: the embedded authorization server (zitadel/oidc op);
//   - auth/clients: dynamic client registration (RFC 7591) and client ID
//     metadata documents, fetched with SSRF protection;
//   - auth/apikey: API keys of the E2B-compatible API, stored as hashes,
//     each standing for a tenant and scopes like an OAuth client.
//
// Nothing here imports the gateway. The identity a verified token
// yields is auth/identity's identity.Identity, the one type auth, the gateway and
// the audit log share for a caller.
package auth
