package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway"
)

// tokenSource hands out an access token from the client credentials
// grant, fetching a new one before the old expires: the embedded
// authorization server's tokens live 10 minutes, shorter than a full run.
type tokenSource struct {
	http         *http.Client
	endpoint     string
	clientID     string
	clientSecret string
	scope        string

	mu        sync.Mutex
	token     string
	renewFrom time.Time
}

// newTokenSource registers a client with the gateway and finds its token
// endpoint in the authorization server's metadata (RFC 8414).
func newTokenSource(ctx context.Context, gw *gatewayProcess, hc *http.Client) (*tokenSource, error) {
	id, secret, err := gw.addClient(ctx, "load")
	if err != nil {
		return nil, err
	}
	var meta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	metaURL := gw.baseURL() + "/.well-known/oauth-authorization-server"
	if err := getJSON(ctx, hc, metaURL, &meta); err != nil {
		return nil, err
	}
	u, err := url.Parse(meta.TokenEndpoint)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s: token_endpoint %q is not an http(s) URL", metaURL, meta.TokenEndpoint)
	}
	if !gateway.IsLoopback(u.Hostname()) {
		return nil, fmt.Errorf("%s: token_endpoint %s is not on loopback; this program connects to nothing else", metaURL, meta.TokenEndpoint)
	}
	// `gateway client add` grants every scope by default: ask for all.
	return &tokenSource{http: hc, endpoint: meta.TokenEndpoint, clientID: id, clientSecret: secret,
		scope: strings.Join(auth.AllScopes, " ")}, nil
}

// get returns a token valid for a while yet.
func (ts *tokenSource) get(ctx context.Context) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.token != "" && time.Now().Before(ts.renewFrom) {
		return ts.token, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {ts.scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// RFC 6749 2.3.1: the id and secret are form-encoded before basic auth.
	req.SetBasicAuth(url.QueryEscape(ts.clientID), url.QueryEscape(ts.clientSecret))
	began := time.Now()
	resp, err := ts.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("token endpoint %s answered %d: %s", ts.endpoint, resp.StatusCode, truncate(string(body), 300))
	}
	lifetime := time.Duration(max(tr.ExpiresIn, 60)) * time.Second
	ts.token, ts.renewFrom = tr.AccessToken, began.Add(lifetime*7/10)
	return ts.token, nil
}

func getJSON(ctx context.Context, hc *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, truncate(string(body), 300))
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// newLoopbackTransport returns the one transport of the run: keep-alive
// connections for at least conns concurrent requests, no proxy (the
// gateway is on loopback), and a dialer that refuses anything else.
func newLoopbackTransport(conns int) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || !gateway.IsLoopback(host) {
				return nil, fmt.Errorf("refusing to connect to %s: this program talks only to loopback", addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        2*conns + 16,
		MaxIdleConnsPerHost: 2*conns + 16,
		IdleConnTimeout:     2 * time.Minute,
	}
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
