// Package egress is the gateway's half of a sandbox's network access. A
// sandbox has no network interface: its runner accepts proxy connections
// (HTTP CONNECT, absolute-URI HTTP, SOCKS5) and opens one stream per
// connection on its egress session (protocol.EgressOpen). Everything is
// decided here, because the runner shares its uid with sandbox code and
// is not trusted: the host is normalised (guard.Normalize), matched
// against the sandbox's allowlist and its tenant's ceiling (policy.Rules),
// resolved by the gateway, and every address is checked by guard.Check
// right before it is dialled, so a name that resolves, or rebinds, to a
// private, loopback or metadata address is refused. On port 443 the TLS
// ClientHello must name the host that was asked for (no domain
// fronting); a plain-HTTP request must carry the URL it was allowed for.
//
// Each connection is bounded (per-sandbox connection count, a per-minute
// byte budget, an idle timeout) and ends in exactly one Record, which the
// gateway writes to its audit log.
package egress
