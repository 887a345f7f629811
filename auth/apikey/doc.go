// Package apikey keeps the API keys of the gateway's E2B-compatible HTTP
// API. The unmodified E2B SDKs send a key as `X-API-KEY: e2b_<hex>`; a key
// stands for a principal just like an OAuth client does: a tenant, scopes
// and an audit identity (Record.Identity).
//
// A Store is one JSON file that holds only SHA-256 hashes of keys, never a
// key: Add returns the key once and forgets it. The operator's CLI and a
// running gateway open the same file from different processes. Writers
// serialise on an flock of a lock file beside it and replace the file by
// an atomic rename; readers take no lock and re-read the file when its
// inode, size or mtime changed, so a running gateway honours a key added
// or revoked by the CLI on its next Lookup.
package apikey
