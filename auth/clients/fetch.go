package clients

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// Defaults of FetcherOptions.
const (
	defaultFetchTimeout = 5 * time.Second
	defaultMaxDocBytes  = 64 << 10
	defaultCacheTTL     = 5 * time.Minute
)

// FetcherOptions configures a MetadataFetcher. The zero value is the
// production setting.
type FetcherOptions struct {
	// AllowLocalhost is dev mode only: it admits http and https document
	// URLs on localhost, 127.0.0.1 and [::1] and lets the fetcher connect
	// to loopback addresses. Every other rule still holds.
	AllowLocalhost bool
	// Timeout bounds a whole fetch: DNS, connect, TLS, headers and body;
	// default 5s.
	Timeout time.Duration
	// MaxBytes caps the document; default 64 KiB. Larger documents are
	// refused, whether or not Content-Length announces them.
	MaxBytes int64
	// CacheTTL is how long a fetched document is used; default 5 min. A
	// Cache-Control max-age from the client's server overrides it within
	// [1 min, 24 h].
	CacheTTL time.Duration
	// Resolver resolves document hosts, for the pre-check and for the
	// dialer; default net.DefaultResolver. Tests point it at their own
	// DNS server.
	Resolver *net.Resolver
	// AllowedScopes are the gateway scopes such a client may be granted;
	// default auth.AllScopes. The protocol scopes are always accepted.
	AllowedScopes []string
	// Now is the clock of the cache; default time.Now.
	Now func() time.Time
}

// MetadataFetcher fetches, checks and caches client ID metadata
// documents. It is safe for concurrent use.
type MetadataFetcher struct {
	opts   FetcherOptions
	client *http.Client
	cache  *cache
}

// NewMetadataFetcher returns a fetcher with opts' defaults filled in.
func NewMetadataFetcher(opts FetcherOptions) *MetadataFetcher {
	if opts.Timeout <= 0 {
		opts.Timeout = defaultFetchTimeout
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = defaultMaxDocBytes
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = defaultCacheTTL
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.AllowedScopes == nil {
		opts.AllowedScopes = auth.AllScopes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dialer := &net.Dialer{
		Timeout:  opts.Timeout,
		Resolver: opts.Resolver,
		Control:  dialControl(opts.AllowLocalhost),
	}
	transport := &http.Transport{
		Proxy:                  nil, // never HTTPS_PROXY: a proxy would dial for us, unchecked
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableCompression:     true, // MaxBytes then counts what was sent
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	return &MetadataFetcher{
		opts: opts,
		client: &http.Client{
			Transport: transport,
			// Redirects are answered, not followed: the document must
			// live at its client_id, and a redirect is also how an SSRF
			// target is usually smuggled past a URL check.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		cache: newCache(),
	}
}

// Fetch returns the client record described by the metadata document at
// clientID: Kind auth.ClientMetadata, AuthMethod none, grants
// authorization_code and refresh_token, redirect URIs and name from the
// document. Records are cached per URL. Errors wrap
// auth.ErrInvalidClientMetadata (and ErrForbiddenAddress for addresses
// refused), except that the caller's own cancellation is returned as is.
func (f *MetadataFetcher) Fetch(ctx context.Context, clientID string) (auth.ClientRecord, error) {
	now := f.opts.Now()
	if rec, ok := f.cache.get(clientID, now); ok {
		return rec, nil
	}
	rec, ttl, err := f.fetch(ctx, clientID, now)
	if err != nil {
		if ctx.Err() != nil {
			return auth.ClientRecord{}, fmt.Errorf("fetch client metadata document %s: %w", clientID, ctx.Err())
		}
		return auth.ClientRecord{}, fmt.Errorf("client metadata document %s: %w", clientID, err)
	}
	f.cache.put(clientID, rec, now, ttl)
	return cloneRecord(rec), nil
}

func (f *MetadataFetcher) fetch(ctx context.Context, clientID string, now time.Time) (auth.ClientRecord, time.Duration, error) {
	u, err := parseMetadataURL(clientID, f.opts.AllowLocalhost)
	if err != nil {
		return auth.ClientRecord{}, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	if err := checkResolved(ctx, f.opts.Resolver, u.Hostname(), f.opts.AllowLocalhost); err != nil {
		return auth.ClientRecord{}, 0, f.transportError(err)
	}
	body, ttl, err := f.get(ctx, u)
	if err != nil {
		return auth.ClientRecord{}, 0, err
	}
	rec, err := parseDocument(body, clientID, f.opts.AllowedScopes, now)
	return rec, ttl, err
}

// get fetches the document body and how long it may be cached.
func (f *MetadataFetcher) get(ctx context.Context, u *url.URL) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, invalidf("build request: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sandgate-client-metadata-fetcher")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, f.transportError(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, 0, invalidf("server answered %s redirecting to %q; redirects are not followed, serve the document at the client_id URL itself", resp.Status, resp.Header.Get("Location"))
	case resp.StatusCode != http.StatusOK:
		return nil, 0, invalidf("server answered %s, want 200 OK", resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, 0, invalidf("Content-Type is %q, want application/json", resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, 0, invalidf("document is %d bytes, more than the limit of %d", resp.ContentLength, f.opts.MaxBytes)
	}
	// Content-Length may be absent or false; count what arrives.
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return nil, 0, f.transportError(err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return nil, 0, invalidf("document is larger than the limit of %d bytes", f.opts.MaxBytes)
	}
	return body, cacheTTL(resp.Header, f.opts.CacheTTL), nil
}

// transportError turns a failure to resolve, connect or read into a
// metadata error. Our own refusals (the connect-time check) come back
// from deep inside net/http and are returned as they are.
func (f *MetadataFetcher) transportError(err error) error {
	var me *metadataError
	var ne net.Error
	switch {
	case errors.As(err, &me):
		return me
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return invalidf("no complete answer within %s", f.opts.Timeout)
	}
	return invalidf("fetch failed: %v", err)
}

func cloneRecord(rec auth.ClientRecord) auth.ClientRecord {
	rec.RedirectURIs = slices.Clone(rec.RedirectURIs)
	rec.GrantTypes = slices.Clone(rec.GrantTypes)
	rec.Scopes = slices.Clone(rec.Scopes)
	return rec
}
