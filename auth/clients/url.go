package clients

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// IsMetadataURL reports whether clientID is meant as the URL of a client
// ID metadata document: an https URL with a host and a path. It is a
// shape test that tells such a client_id from a registered one (those are
// never URLs); Fetch applies the full rules and says what breaks them.
func IsMetadataURL(clientID string) bool {
	return looksLikeMetadataURL(clientID, false)
}

// IsMetadataURL is the package-level IsMetadataURL, except that in dev
// mode (FetcherOptions.AllowLocalhost) http URLs of localhost, 127.0.0.1
// and [::1] count too.
func (f *MetadataFetcher) IsMetadataURL(clientID string) bool {
	return looksLikeMetadataURL(clientID, f.opts.AllowLocalhost)
}

func looksLikeMetadataURL(clientID string, allowLocalhost bool) bool {
	u, err := url.Parse(clientID)
	if err != nil || u.Opaque != "" || u.Host == "" || u.Path == "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return allowLocalhost && isLocalhostName(u.Hostname())
	}
	return false
}

// parseMetadataURL applies the rules of the metadata document draft to a
// client_id, plus ours: an ASCII URL, no IP literals, a DNS host name.
// Dev mode admits http and https URLs of localhost, 127.0.0.1 and [::1].
func parseMetadataURL(raw string, allowLocalhost bool) (*url.URL, error) {
	if i := strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' }); i >= 0 {
		// Non-ASCII, spaces and backslashes are read differently by
		// different URL parsers; the client_id is compared as a string,
		// so it must have one reading.
		return nil, invalidf("client_id must be a plain ASCII URL without spaces or backslashes (offending character at byte %d)", i)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidf("client_id is not a URL: %v", err)
	}
	local := allowLocalhost && isLocalhostName(u.Hostname())
	if u.Scheme != "https" && !(u.Scheme == "http" && local) {
		if u.Scheme == "" {
			return nil, invalidf("client_id must be an https URL")
		}
		return nil, invalidf("client_id must be an https URL, not %s", u.Scheme)
	}
	switch {
	case u.Opaque != "" || u.Host == "":
		return nil, invalidf("client_id must be an absolute https URL with a host")
	case u.User != nil:
		return nil, invalidf("client_id must not contain a user name or password")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, invalidf("client_id must not contain a fragment (#...)")
	}
	if err := checkPort(u.Port(), u.Host); err != nil {
		return nil, err
	}
	if !local {
		if err := checkHostName(u.Hostname()); err != nil {
			return nil, err
		}
	}
	if u.Path == "" || u.Path == "/" {
		return nil, invalidf("client_id must have a path naming the document, e.g. https://%s/client.json", u.Host)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		// u.Path is decoded, so %2e%2e is caught here too.
		if seg == "." || seg == ".." {
			return nil, invalidf("client_id path must not contain . or .. segments")
		}
	}
	return u, nil
}

func checkPort(port, host string) error {
	if strings.HasSuffix(host, ":") {
		return invalidf("client_id has an empty port")
	}
	if port == "" {
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return invalidf("client_id port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// checkHostName accepts DNS names of at least two labels. IP literals are
// refused outright (the draft's clients have names, and an address in the
// URL is the shortest route to an internal service); so are names the
// WHATWG URL standard reads as IPv4 (numeric last label: "127.1",
// "2130706433", "0x7f.0.0.1") because some resolvers do too.
func checkHostName(host string) error {
	if addr, err := netip.ParseAddr(host); err == nil {
		if reason := forbiddenReason(addr); reason != "" {
			return forbiddenf("client_id host %s is an IP address (%s); use a DNS name", host, reason)
		}
		return forbiddenf("client_id host %s is an IP address; use a DNS name", host)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if isLocalhostName(name) || strings.HasSuffix(name, ".localhost") {
		return forbiddenf("client_id host %s is this machine (localhost is allowed only in dev mode)", host)
	}
	labels := strings.Split(name, ".")
	if last := labels[len(labels)-1]; strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "" {
		return forbiddenf("client_id host %q reads as an IP address; use a DNS name", host)
	}
	if len(labels) < 2 {
		return invalidf("client_id host %q must be a fully qualified domain name", host)
	}
	for _, l := range labels {
		if !validLabel(l) {
			return invalidf("client_id host %q is not a valid DNS name (label %q)", host, l)
		}
	}
	return nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, c := range []byte(l) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isLocalhostName reports whether host (as url.URL.Hostname returns it)
// is one of the three spellings of this machine that dev mode and RFC 8252
// loopback redirect URIs admit.
func isLocalhostName(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// checkRedirectURI accepts https URLs with a host, and (allowLoopbackHTTP)
// http URLs of a loopback host, which RFC 8252 native apps listen on. No
// fragments (RFC 6749 §3.1.2), no user info, no custom schemes: a
// javascript: or data: redirect would run the code in our origin's stead.
func checkRedirectURI(raw string, allowLoopbackHTTP bool) error {
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return redirectf("redirect URI %q contains spaces or control characters", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redirectf("redirect URI %q is not a URL", raw)
	}
	loopbackHTTP := allowLoopbackHTTP && u.Scheme == "http" && isLocalhostName(u.Hostname())
	switch {
	case u.Scheme != "https" && !loopbackHTTP:
		if allowLoopbackHTTP {
			return redirectf("redirect URI %q must use https (or http on 127.0.0.1, [::1] or localhost for native apps)", raw)
		}
		return redirectf("redirect URI %q must use https", raw)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return redirectf("redirect URI %q must be an absolute URL with a host", raw)
	case u.User != nil:
		return redirectf("redirect URI %q must not contain a user name or password", raw)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return redirectf("redirect URI %q must not contain a fragment (#...)", raw)
	case strings.Contains(u.Host, "*"):
		return redirectf("redirect URI %q must not contain wildcards", raw)
	}
	return nil
}
