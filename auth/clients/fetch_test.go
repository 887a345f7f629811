package clients_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

// docServer serves a client ID metadata document on 127.0.0.1, which only
// a dev-mode fetcher may reach. The handler gets the document's own URL.
type docServer struct {
	url  string // the client_id
	hits atomic.Int32
}

func startDocServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, clientID string)) *docServer {
	t.Helper()
	d := &docServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.hits.Add(1)
		handler(w, r, d.url)
	}))
	t.Cleanup(srv.Close)
	d.url = srv.URL + "/oauth/client.json"
	return d
}

// serveJSON answers with body, where {{ID}} stands for the client_id.
func serveJSON(body string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, id string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.ReplaceAll(body, "{{ID}}", id)))
	}
}

const goodDoc = `{"client_id":"{{ID}}","client_name":"Example MCP Client","client_uri":"https://app.example.com",
	"redirect_uris":["http://127.0.0.1:33418/callback","https://app.example.com/cb"],
	"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`

func devFetcher(opts clients.FetcherOptions) *clients.MetadataFetcher {
	opts.AllowLocalhost = true
	return clients.NewMetadataFetcher(opts)
}

func TestFetchDocument(t *testing.T) {
	t.Parallel()
	d := startDocServer(t, serveJSON(goodDoc))
	clk := &clock{now: fixedNow}
	f := devFetcher(clients.FetcherOptions{Now: clk.Now, AllowedScopes: []string{auth.ScopeFilesRead}})
	rec, err := f.Fetch(t.Context(), d.url)
	if err != nil {
		t.Fatal(err)
	}
	want := auth.ClientRecord{
		ID: d.url, Kind: auth.ClientMetadata, Name: "Example MCP Client",
		RedirectURIs: []string{"http://127.0.0.1:33418/callback", "https://app.example.com/cb"},
		GrantTypes:   []string{auth.GrantAuthCode, auth.GrantRefresh}, AuthMethod: auth.AuthMethodNone,
		Scopes: []string{auth.ScopeFilesRead}, CreatedAt: fixedNow, MetadataURL: d.url, FetchedAt: fixedNow,
		ClientURI: "https://app.example.com",
	}
	if mustJSONAny(t, rec) != mustJSONAny(t, want) {
		t.Errorf("record\n%s\nwant\n%s", mustJSONAny(t, rec), mustJSONAny(t, want))
	}
}

// TestFetchRejects is the document breakout table: each response must be
// refused with a message that says what is wrong.
func TestFetchRejects(t *testing.T) {
	t.Parallel()
	const maxBytes = 1024
	withDoc := func(members string) func(http.ResponseWriter, *http.Request, string) {
		return serveJSON(`{"client_id":"{{ID}}","redirect_uris":["https://app.example.com/cb"],` + members + `}`)
	}
	big := `{"client_id":"{{ID}}","redirect_uris":["https://a.example/cb"],"pad":"` + strings.Repeat("x", maxBytes) + `"}`
	cases := []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request, string)
		want    string
	}{
		{"client_id mismatch", serveJSON(`{"client_id":"https://other.example/client.json","redirect_uris":["https://a.example/cb"]}`), "does not equal the URL"},
		{"client_id with other case", func(w http.ResponseWriter, r *http.Request, id string) {
			serveJSON(`{"client_id":"`+strings.ToUpper(id)+`","redirect_uris":["https://a.example/cb"]}`)(w, r, id)
		}, "does not equal the URL"},
		{"client_id missing", serveJSON(`{"redirect_uris":["https://a.example/cb"]}`), "does not equal the URL"},
		{"client_id in other case", serveJSON(`{"Client_ID":"{{ID}}","redirect_uris":["https://a.example/cb"]}`), "does not equal the URL"},
		{"client_id a number", serveJSON(`{"client_id":1,"redirect_uris":["https://a.example/cb"]}`), "client_id must be a string"},
		{"missing redirect_uris", serveJSON(`{"client_id":"{{ID}}"}`), "redirect_uris is required"},
		{"empty redirect_uris", serveJSON(`{"client_id":"{{ID}}","redirect_uris":[]}`), "redirect_uris is required"},
		{"javascript redirect", serveJSON(`{"client_id":"{{ID}}","redirect_uris":["javascript:alert(1)"]}`), "must use https"},
		{"http redirect", serveJSON(`{"client_id":"{{ID}}","redirect_uris":["http://app.example.com/cb"]}`), "must use https"},
		{"client_secret", withDoc(`"client_secret":"hunter2"`), "must not contain client_secret"},
		{"client_secret_basic", withDoc(`"token_endpoint_auth_method":"client_secret_basic"`), "shared secret"},
		{"client_secret_post", withDoc(`"token_endpoint_auth_method":"client_secret_post"`), "shared secret"},
		{"client_secret_jwt", withDoc(`"token_endpoint_auth_method":"client_secret_jwt"`), "shared secret"},
		{"private_key_jwt", withDoc(`"token_endpoint_auth_method":"private_key_jwt"`), "not supported yet"},
		{"tls_client_auth", withDoc(`"token_endpoint_auth_method":"tls_client_auth"`), "not supported"},
		{"client_credentials", withDoc(`"grant_types":["client_credentials"]`), `"client_credentials" is not available`},
		{"implicit response", withDoc(`"response_types":["token"]`), "response type"},
		{"unknown scope", withDoc(`"scope":"root"`), `scope "root" is not offered`},
		{"not JSON", serveJSON(`<html>hello</html>`), "not a JSON object"},
		{"JSON array", serveJSON(`[{"client_id":"{{ID}}"}]`), "not a JSON object"},
		{"trailing data", serveJSON(goodDoc + `{}`), "not a JSON object"},
		{"text/html", func(w http.ResponseWriter, _ *http.Request, _ string) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("{}"))
		}, `Content-Type is "text/html", want application/json`},
		{"no Content-Type", func(w http.ResponseWriter, _ *http.Request, _ string) {
			w.Header()["Content-Type"] = nil
			_, _ = w.Write([]byte("{}"))
		}, "want application/json"},
		{"404", func(w http.ResponseWriter, r *http.Request, _ string) { http.NotFound(w, r) }, "404 Not Found"},
		{"oversized with Content-Length", serveJSON(big), "more than the limit of 1024"},
		{"oversized without Content-Length", func(w http.ResponseWriter, _ *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json")
			for chunk := range slices.Chunk([]byte(strings.ReplaceAll(big, "{{ID}}", id)), 100) {
				_, _ = w.Write(chunk)
				w.(http.Flusher).Flush() // chunked encoding: no Content-Length
			}
		}, "larger than the limit of 1024 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := startDocServer(t, tc.handler)
			f := devFetcher(clients.FetcherOptions{MaxBytes: maxBytes})
			_, err := f.Fetch(t.Context(), d.url)
			if !errors.Is(err, auth.ErrInvalidClientMetadata) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInvalidClientMetadata mentioning %q", err, tc.want)
			}
		})
	}
}

func TestFetchRefusesRedirect(t *testing.T) {
	t.Parallel()
	target := startDocServer(t, serveJSON(goodDoc))
	d := startDocServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		http.Redirect(w, r, target.url, http.StatusFound)
	})
	_, err := devFetcher(clients.FetcherOptions{}).Fetch(t.Context(), d.url)
	if !errors.Is(err, auth.ErrInvalidClientMetadata) || !strings.Contains(err.Error(), "redirects are not followed") ||
		!strings.Contains(err.Error(), target.url) {
		t.Errorf("error %v, want a refused redirect naming its target", err)
	}
	if target.hits.Load() != 0 {
		t.Error("the redirect was followed")
	}
}

func TestFetchTimeout(t *testing.T) {
	t.Parallel()
	d := startDocServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	start := time.Now()
	_, err := devFetcher(clients.FetcherOptions{Timeout: 200 * time.Millisecond}).Fetch(t.Context(), d.url)
	if !errors.Is(err, auth.ErrInvalidClientMetadata) || !strings.Contains(err.Error(), "no complete answer within 200ms") {
		t.Errorf("error %v, want a timeout", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Fetch took %s", elapsed)
	}
}

func TestFetchSlowBody(t *testing.T) {
	t.Parallel()
	d := startDocServer(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"client_id":`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	_, err := devFetcher(clients.FetcherOptions{Timeout: 200 * time.Millisecond}).Fetch(t.Context(), d.url)
	if !errors.Is(err, auth.ErrInvalidClientMetadata) || !strings.Contains(err.Error(), "no complete answer within") {
		t.Errorf("error %v, want a timeout", err)
	}
}

func TestFetchCallerCancel(t *testing.T) {
	t.Parallel()
	d := startDocServer(t, func(w http.ResponseWriter, r *http.Request, _ string) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := devFetcher(clients.FetcherOptions{}).Fetch(ctx, d.url)
	if !errors.Is(err, context.Canceled) || errors.Is(err, auth.ErrInvalidClientMetadata) {
		t.Errorf("error %v, want the caller's cancellation, not a verdict on the client", err)
	}
}

func TestFetchCleansName(t *testing.T) {
	t.Parallel()
	d := startDocServer(t, serveJSON(`{"client_id":"{{ID}}","redirect_uris":["https://a.example/cb"],
		"client_name":"Trusted\u202e\u0007 App\n`+strings.Repeat("z", 200)+`","client_uri":"javascript:alert(1)"}`))
	rec, err := devFetcher(clients.FetcherOptions{}).Fetch(t.Context(), d.url)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Trusted App" + strings.Repeat("z", 89); rec.Name != want {
		t.Errorf("Name = %q, want %q", rec.Name, want)
	}
	if rec.ClientURI != "" {
		t.Errorf("ClientURI = %q, want a javascript: URI dropped", rec.ClientURI)
	}
}

func mustJSONAny(t *testing.T, v any) string { t.Helper(); return mustJSON(t, v) }
