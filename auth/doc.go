// Package auth holds what the OAuth 2.1 pieces of Sandgate share: the
// Identity a verified token yields, the scopes that guard tool
// categories, registered client records, and error categories.
//
// Subpackages:
//   - auth/resource: the gateway as a protected resource (RFC 9728
//     metadata, bearer token verification, WWW-Authenticate challenges);
//   - auth/issuer: the embedded authorization server (zitadel/oidc op);
//   - auth/clients: dynamic client registration (RFC 7591) and client ID
//     metadata documents, fetched with SSRF protection;
//   - auth/apikey: API keys of the E2B-compatible API, stored as hashes,
//     each standing for a tenant and scopes like an OAuth client.
//
// Nothing here imports the gateway: the gateway maps Identity to its own
// Principal at its edge.
package auth
