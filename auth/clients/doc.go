// Package clients lets OAuth clients of the embedded authorization server
// make themselves known, in the two ways an MCP client may do it:
//
//   - Dynamic Client Registration (RFC 7591): RegistrationHandler serves
//     POST /register, checks the request, creates a public client (or a
//     confidential one with a generated secret, shown once and stored
//     bcrypt-hashed) and stores it in an auth.ClientStore. A command-line
//     agent may register the device grant (RFC 8628) without redirect URIs.
//   - Client ID Metadata Documents (MCP 2025-11-25,
//     draft-ietf-oauth-client-id-metadata-document): the client_id is an
//     HTTPS URL, and MetadataFetcher fetches and checks the JSON document
//     it names, caching the result per URL.
//
// Fetching a URL that any anonymous caller chooses is a server-side
// request forgery risk, so the fetcher is the part of this package that
// must stay strict: HTTPS only, host names only (no IP literals), every
// resolved address checked before the request and every dialled address
// checked again at connect time (net.Dialer.Control) so DNS rebinding
// cannot reach loopback, private, link-local (cloud metadata) or other
// special addresses; no proxies, no redirects, a size cap and a timeout.
//
// Every refusal wraps auth.ErrInvalidClientMetadata; address refusals also
// wrap ErrForbiddenAddress. The message says what to fix.
package clients
