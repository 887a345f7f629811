package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway"
)

// oauthGateway is a test gateway with the embedded authorization server
// on its own origin, as `make run` starts it.
type oauthGateway struct {
	*testGateway
	Base    string // origin, e.g. http://127.0.0.1:40123
	AuthDir string
}

func startOAuthGateway(t *testing.T) *oauthGateway {
	t.Helper()
	return startOAuthGatewayOn(t, startGatewayWith)
}

// startLocalOAuthGateway is startOAuthGateway on the in-process provider,
// for what OAuth decides without a container (scopes, isolation).
func startLocalOAuthGateway(t *testing.T) *oauthGateway {
	t.Helper()
	return startOAuthGatewayOn(t, startLocalGatewayWith)
}

func startOAuthGatewayOn(t *testing.T, start func(testing.TB, net.Listener, func(*gateway.Config)) *testGateway, extra ...func(*gateway.Config)) *oauthGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	resourceURI := base + "/mcp"
	og := &oauthGateway{Base: base}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var is *issuer.Server
	tg := start(t, ln, func(c *gateway.Config) {
		og.AuthDir = c.VarDir + "/auth"
		fetcher := clients.NewMetadataFetcher(clients.FetcherOptions{AllowLocalhost: true})
		is, err = issuer.New(t.Context(), issuer.Config{Issuer: base, Resources: []string{resourceURI}, Dir: og.AuthDir, DevMode: true,
			ClientFetcher: fetcher.Fetch,
			RegisterHandler: func(store auth.ClientStore) http.Handler {
				return clients.RegistrationHandler(store, clients.RegistrationOptions{})
			}, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { is.Close() })
		v, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{Issuer: base, Audience: resourceURI, Keys: is})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := resource.New(resource.Config{Resource: resourceURI, AuthorizationServers: []string{base}, ScopesSupported: auth.AllScopes, Verifier: v, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		c.Auth, c.AuthServer, c.AuthRoutes = rs, is.Handler(), is.Routes()
		for _, f := range extra {
			f(c)
		}
	})
	og.testGateway = tg
	return og
}

// tokenEndpoint discovers the token endpoint from the authorization
// server metadata, as a client does.
func (og *oauthGateway) tokenEndpoint(t *testing.T) string {
	t.Helper()
	var m struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(t, og.Base+"/.well-known/oauth-authorization-server", &m)
	return m.TokenEndpoint
}

// browser is an OAuth user agent: a cookie jar, and redirects followed
// except to the client's redirect URI, whose URL it returns.
type browser struct {
	t        *testing.T
	http     *http.Client
	redirect string // redirect_uri prefix where following stops
}

func newBrowser(t *testing.T, redirectURI string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, redirect: redirectURI}
	b.http = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), b.redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

var (
	formRE  = regexp.MustCompile(`(?is)<form[^>]*action="([^"]*)"[^>]*>(.*?)</form>`)
	inputRE = regexp.MustCompile(`(?is)<input[^>]*>`)
	attrRE  = regexp.MustCompile(`(?is)(name|value|type)="([^"]*)"`)
	btnRE   = regexp.MustCompile(`(?is)<button[^>]*name="([^"]*)"[^>]*value="([^"]*)"`)
)

// submit finds the page's form, fills fields (hidden fields kept),
// presses the button whose value is button ("" for none), and returns
// the final response.
func (b *browser) submit(page *http.Response, fields map[string]string, button string) *http.Response {
	b.t.Helper()
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	m := formRE.FindSubmatch(body)
	if m == nil {
		b.t.Fatalf("no form on %s (status %d):\n%s", page.Request.URL, page.StatusCode, body)
	}
	vals := url.Values{}
	for _, in := range inputRE.FindAll(m[2], -1) {
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllSubmatch(in, -1) {
			attrs[strings.ToLower(string(a[1]))] = html.UnescapeString(string(a[2]))
		}
		if attrs["name"] != "" && attrs["type"] != "submit" {
			vals.Set(attrs["name"], attrs["value"])
		}
	}
	for k, v := range fields {
		vals.Set(k, v)
	}
	if button != "" {
		for _, bm := range btnRE.FindAllSubmatch(m[2], -1) {
			if string(bm[2]) == button {
				vals.Set(string(bm[1]), button)
			}
		}
	}
	action, err := page.Request.URL.Parse(html.UnescapeString(string(m[1])))
	if err != nil {
		b.t.Fatal(err)
	}
	resp, err := b.http.PostForm(action.String(), vals)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp
}

// pkce returns a verifier and its S256 challenge.
func pkce() (string, string) {
	v := make([]byte, 32)
	rand.Read(v)
	verifier := base64.RawURLEncoding.EncodeToString(v)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// postToken calls the token endpoint; basic is "id:secret" or "".
func postToken(t *testing.T, endpoint string, form url.Values, basic string) (tokenResponse, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id, secret, ok := strings.Cut(basic, ":"); ok {
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr tokenResponse
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("token endpoint answered %d %s", resp.StatusCode, b)
	}
	return tr, resp.StatusCode
}

func getJSON(t *testing.T, u string, into any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// redirectListener returns a loopback redirect URI; nothing needs to
// answer there because the browser stops before following it.
func redirectURI() string {
	return fmt.Sprintf("http://127.0.0.1:%d/callback", 40000+os.Getpid()%20000)
}

var _ = context.Background
var _ = httptest.NewServer
