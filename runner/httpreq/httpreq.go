// Package httpreq serves the http_request tool inside the sandbox: one
// HTTP request made through the sandbox's own egress proxy, so it meets
// exactly the policy, limits and audit of any program there.
package httpreq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

const (
	defaultBody    = 1 << 20
	defaultTimeout = 30 * time.Second
	maxRedirects   = 10
)

// Client makes requests through the proxy at Proxy (host:port).
type Client struct {
	Proxy string
	// RootCAs, when set, replaces the system roots (the system's plus
	// the operator's extra CAs).
	RootCAs *x509.CertPool
}

// Do makes the request and returns the response, its body cut to the
// request's cap.
func (c *Client) Do(ctx context.Context, r protocol.HTTPRequest) (protocol.HTTPResult, error) {
	req, err := c.build(ctx, r)
	if err != nil {
		return protocol.HTTPResult{}, err
	}
	hc, err := c.client(r)
	if err != nil {
		return protocol.HTTPResult{}, err
	}
	defer hc.CloseIdleConnections()
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return protocol.HTTPResult{}, requestError(err)
	}
	defer resp.Body.Close()
	limit := r.MaxBodyBytes
	if limit <= 0 {
		limit = defaultBody
	}
	limit = min(limit, protocol.MaxHTTPBody)
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return protocol.HTTPResult{}, protocol.Errorf(protocol.CodeNetwork, "read the response body: %v", err)
	}
	rest, _ := io.Copy(io.Discard, resp.Body)
	return protocol.HTTPResult{Status: resp.StatusCode, StatusText: http.StatusText(resp.StatusCode), Headers: resp.Header,
		Body: body, BodyBytes: int64(len(body)) + rest, Truncated: rest > 0, FinalURL: resp.Request.URL.String(),
		DurationMs: time.Since(start).Milliseconds()}, nil
}

func (c *Client) build(ctx context.Context, r protocol.HTTPRequest) (*http.Request, error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, protocol.Errorf(protocol.CodeInvalid, "url %q: want an absolute http:// or https:// URL", r.URL)
	}
	if len(r.Body) > protocol.MaxHTTPBody {
		return nil, protocol.Errorf(protocol.CodeInvalid, "request body of %d bytes exceeds %d", len(r.Body), protocol.MaxHTTPBody)
	}
	method := strings.ToUpper(r.Method)
	if method == "" {
		method = http.MethodGet
	}
	timeout := defaultTimeout
	if r.TimeoutMs > 0 {
		timeout = time.Duration(r.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(string(r.Body)))
	if err != nil {
		cancel()
		return nil, protocol.Errorf(protocol.CodeInvalid, "request: %v", err)
	}
	// The context lives as long as the body is read; the cancel runs
	// when the request's context is collected with the request.
	context.AfterFunc(ctx, cancel)
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	return req, nil
}

// client is an http.Client that goes through the sandbox's proxy (no
// environment lookups: the runner's environment is not the sandbox's).
func (c *Client) client(r protocol.HTTPRequest) (*http.Client, error) {
	proxy := &url.URL{Scheme: "http", Host: c.Proxy}
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), ForceAttemptHTTP2: true, TLSHandshakeTimeout: 15 * time.Second,
		OnProxyConnectResponse: refusedTunnel}
	roots := c.RootCAs
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeNotFound, "ca_file: %v", err)
		}
		if roots != nil {
			roots = roots.Clone()
		} else if roots, err = x509.SystemCertPool(); err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, protocol.Errorf(protocol.CodeInvalid, "ca_file %s holds no PEM certificate", r.CAFile)
		}
	}
	if roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	}
	hc := &http.Client{Transport: tr}
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !r.FollowRedirects {
			return http.ErrUseLastResponse
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return hc, nil
}

// requestError says what went wrong, keeping the proxy's refusal (the
// Go client reports a refused CONNECT by its status text only).
func requestError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return protocol.Errorf(protocol.CodeNetwork, "request failed: %v", err)
}

// refusedTunnel turns a refused CONNECT into an error that carries the
// proxy's reason; Go's client would report only the status text.
func refusedTunnel(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	reason, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return fmt.Errorf("the egress proxy answered %s: %s", resp.Status, strings.TrimSpace(string(reason)))
}
