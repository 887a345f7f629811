// Package resource makes the gateway an OAuth 2.1 protected resource as the
// MCP authorization specification (2025-06-18, 2025-11-25) describes it.
//
// It verifies bearer access tokens, either locally as JWTs (RFC 9068 style,
// keys from an in-process [auth.KeySource] or from the issuer's JWKS found
// by RFC 8414 discovery) or remotely by token introspection (RFC 7662). It
// serves the protected resource metadata of RFC 9728, and answers requests
// that lack a usable token with the WWW-Authenticate challenges of RFC 6750
// that point MCP clients at that metadata.
//
// Security properties the package keeps:
//   - a token is taken only from the Authorization header; one sent in the
//     query string or a form body is refused, because URLs and bodies end
//     up in logs and caches;
//   - only RS256, ES256 and EdDSA signatures are accepted, so neither "none"
//     nor an HMAC keyed with a public key can pass;
//   - a token must name this resource in "aud" (RFC 8707), so a token minted
//     for another service cannot be replayed here;
//   - no token, nor any part of one, is ever logged or echoed back;
//   - with an [auth.RevocationSource] (the embedded issuer), a token issued
//     to a client before `gateway client revoke` is refused at once, even
//     when its verification is cached.
//
// Errors from a [Verifier] that wrap [auth.ErrInvalidToken] carry a reason
// that is safe to show the client; any other error means the verifier could
// not reach its key source or introspection endpoint.
package resource
