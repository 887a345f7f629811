package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// errClientStatus marks a 4xx answer. For discovery it means the metadata
// is not at that location (servers answer 404, 400 or 405), so the next
// location is tried.
var errClientStatus = errors.New("no such document")

// discoverJWKS finds the issuer's jwks_uri from its authorization server
// metadata (RFC 8414), trying the locations in the order the MCP
// authorization spec gives, and returns the first that exists.
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	urls, err := metadataURLs(issuer)
	if err != nil {
		return "", err
	}
	for _, u := range urls {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err := getJSON(ctx, client, u, &md)
		if errors.Is(err, errClientStatus) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("discover issuer metadata at %s: %w", u, err)
		}
		// RFC 8414 §3.3: metadata naming another issuer must not be used;
		// otherwise whoever serves it could substitute their own keys.
		if md.Issuer != issuer {
			return "", fmt.Errorf("discover issuer metadata at %s: it names issuer %q, want %q", u, md.Issuer, issuer)
		}
		if err := checkHTTPURL(md.JWKSURI, strings.HasPrefix(issuer, "https:")); err != nil {
			return "", fmt.Errorf("discover issuer metadata at %s: jwks_uri: %w", u, err)
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("discover issuer metadata: none of %s exists", strings.Join(urls, ", "))
}

// metadataURLs lists where the metadata of issuer may be. For an issuer with
// a path the well-known segment goes between host and path (RFC 8414 §3.1),
// and OpenID Connect discovery is tried in both its inserted and its
// appended form; without a path the two well-known names are tried.
func metadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("issuer %q is not an http(s) URL without query or fragment", issuer)
	}
	base := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{
			base + "/.well-known/oauth-authorization-server",
			base + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + path,
		base + "/.well-known/openid-configuration" + path,
		base + path + "/.well-known/openid-configuration",
	}, nil
}

// checkHTTPURL reports whether s is an absolute http(s) URL, https only if
// requireTLS: keys for an https issuer must not travel in clear.
func checkHTTPURL(s string, requireTLS bool) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		return fmt.Errorf("%q is not an absolute URL", s)
	case u.Scheme == "https", u.Scheme == "http" && !requireTLS:
		return nil
	default:
		return fmt.Errorf("%q has scheme %q, want https", s, u.Scheme)
	}
}

// getJSON GETs url and decodes a JSON body of at most maxJWKSBytes into v.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return fmt.Errorf("%w: status %s", errClientStatus, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("body larger than %d bytes", maxJWKSBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}
