package issuer_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// TestDCRConfidentialFlow: a client registered at /register with a
// secret runs the code flow and authenticates with that secret.
func TestDCRConfidentialFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.confidentialClient(t)
	if c.secret == "" {
		t.Fatal("no secret from registration")
	}
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	cl, _ := verify(t, tok.AccessToken, e.publicKeys(t))
	if cl.str("client_id") != c.id {
		t.Errorf("client_id = %q", cl.str("client_id"))
	}
	mustOK(t, e.refresh(t, c, tok.RefreshToken, nil))
}

// TestClientStoreGuards: the store handed to the registration handler
// refuses records that would shadow other kinds of client.
func TestClientStoreGuards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := *e.store.Load()
	ctx := t.Context()
	for name, rec := range map[string]auth.ClientRecord{
		"url id":   {ID: "https://x.example/c", Kind: auth.ClientDynamic},
		"metadata": {ID: "m1", Kind: auth.ClientMetadata},
		"empty id": {Kind: auth.ClientDynamic},
	} {
		if err := store.PutClient(ctx, rec); !errors.Is(err, auth.ErrInvalidClientMetadata) {
			t.Errorf("%s: PutClient = %v", name, err)
		}
	}
	if _, err := store.GetClient(ctx, "nope"); !errors.Is(err, auth.ErrClientNotFound) {
		t.Errorf("GetClient(unknown) = %v", err)
	}
	c := e.publicClient(t)
	rec, err := store.GetClient(ctx, c.id)
	if err != nil || rec.Kind != auth.ClientDynamic {
		t.Fatalf("GetClient = %v, %v", rec, err)
	}
	rec.Kind = auth.ClientStatic
	if err := store.PutClient(ctx, rec); err == nil {
		t.Error("a dynamic client was turned into a static one")
	}
}

const (
	metadataClientID    = "https://client.example/oauth/client.json"
	devMetadataClientID = "http://localhost:3000/client.json"
)

// testFetcher stands in for auth/clients' MetadataFetcher: it knows one
// document and counts fetches.
func testFetcher(calls *atomic.Int32) func(context.Context, string) (auth.ClientRecord, error) {
	return func(_ context.Context, id string) (auth.ClientRecord, error) {
		if calls != nil {
			calls.Add(1)
		}
		if id != metadataClientID && id != devMetadataClientID {
			return auth.ClientRecord{}, auth.ErrClientNotFound
		}
		return auth.ClientRecord{
			ID: id, Kind: auth.ClientMetadata, Name: "Metadata Client", RedirectURIs: []string{testRedirect},
			GrantTypes: []string{auth.GrantAuthCode, auth.GrantRefresh}, AuthMethod: auth.AuthMethodNone,
		}, nil
	}
}

// TestMetadataDocumentClient: a client whose client_id is its metadata
// document URL runs the full flow as a public client.
func TestMetadataDocumentClient(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	e := newEnv(t, withFetcher(testFetcher(&calls)))
	c := client{id: metadataClientID}
	_, page := e.consentPage(t, newAuthz(c))
	for _, want := range []string{"Metadata Client", "published by client.example"} {
		if !strings.Contains(page, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))
	cl, _ := verify(t, tok.AccessToken, e.publicKeys(t))
	if cl.str("client_id") != metadataClientID || !slices.Equal(cl.aud(), []string{e.resource()}) {
		t.Errorf("client_id %q aud %v", cl.str("client_id"), cl.aud())
	}
	mustOK(t, e.refresh(t, c, tok.RefreshToken, nil))
	if n := calls.Load(); n > 2 {
		t.Errorf("%d fetches of one document; the cache should have served most", n)
	}

	// Unknown documents are an unknown client: a page, no redirect.
	resp, _ := e.authorize(t, e.browser(t), newAuthz(client{id: "https://client.example/other.json"}))
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("unknown document: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestMetadataDocumentsDisabled: without a fetcher, URL client IDs are
// unknown clients.
func TestMetadataDocumentsDisabled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	resp, _ := e.authorize(t, e.browser(t), newAuthz(client{id: metadataClientID}))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("URL client without fetcher: %d", resp.StatusCode)
	}
}

// TestMetadataDocumentsDevMode: http://localhost documents are clients
// only in dev mode.
func TestMetadataDocumentsDevMode(t *testing.T) {
	t.Parallel()
	for _, dev := range []bool{false, true} {
		e := newEnv(t, withFetcher(testFetcher(nil)), func(c *issuer.Config) { c.DevMode = dev })
		resp, body := e.authorize(t, e.browser(t), newAuthz(client{id: devMetadataClientID}))
		loginPage := resp.StatusCode == http.StatusOK && strings.Contains(body, `action="login"`)
		if loginPage != dev {
			t.Errorf("dev mode %t: http://localhost client accepted %t (%d)", dev, loginPage, resp.StatusCode)
		}
	}
}
