package issuer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
	"github.com/sandgate/sandgate/auth/issuer"
)

func TestMain(m *testing.M) {
	issuer.SetBcryptCost(bcrypt.MinCost)
	os.Exit(m.Run())
}

const (
	testUser     = "alice"
	testPassword = "alice-password"
	testTenant   = "acme"
	// testRedirect is a loopback redirect URI nobody listens on: the test
	// browser stops at the redirect and reads the Location header.
	testRedirect = "http://127.0.0.1:9/callback"
)

// env is one authorization server behind a real HTTP listener. The
// listener outlives the Server, so restart can build a new Server on the
// same directory and issuer URL.
type env struct {
	t       *testing.T
	cfg     issuer.Config
	srv     *issuer.Server
	url     string
	handler atomic.Pointer[http.Handler]
	store   atomic.Pointer[auth.ClientStore] // what RegisterHandler was given
}

type option func(*issuer.Config)

func withoutDCR() option { return func(c *issuer.Config) { c.RegisterHandler = nil } }

func withFetcher(f func(context.Context, string) (auth.ClientRecord, error)) option {
	return func(c *issuer.Config) { c.ClientFetcher = f }
}

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	e := &env{t: t}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*e.handler.Load()).ServeHTTP(w, r)
	}))
	e.url = "http://" + ts.Listener.Addr().String()
	e.cfg = issuer.Config{
		Issuer:          e.url,
		Resources:       []string{e.url + "/mcp", e.url + "/other"},
		Dir:             t.TempDir() + "/auth",
		RegisterHandler: e.registration,
		Logger:          slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&e.cfg)
	}
	if err := issuer.AddUser(e.cfg.Dir, testUser, testPassword, testTenant); err != nil {
		t.Fatal(err)
	}
	e.start()
	ts.Start()
	t.Cleanup(ts.Close)
	return e
}

func (e *env) start() {
	e.t.Helper()
	srv, err := issuer.New(e.t.Context(), e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { srv.Close() })
	h := srv.Handler()
	e.srv = srv
	e.handler.Store(&h)
}

// restart replaces the Server by a new one on the same directory, as a
// gateway restart would.
func (e *env) restart() {
	e.t.Helper()
	if err := e.srv.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.start()
}

// registration mounts the real RFC 7591 handler of auth/clients on the
// issuer's client store, and keeps the store for tests that need it.
func (e *env) registration(store auth.ClientStore) http.Handler {
	e.store.Store(&store)
	return clients.RegistrationHandler(store, clients.RegistrationOptions{})
}

// client is a registered client as a test uses it.
type client struct {
	id, secret string
	post       bool // authenticate with client_secret_post rather than Basic
}

// register registers a client through /register.
func (e *env) register(t *testing.T, meta map[string]any) client {
	t.Helper()
	status, raw := e.registerRaw(t, meta)
	if status != http.StatusCreated {
		t.Fatalf("register: %d %s", status, raw)
	}
	var out struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return client{id: out.ID, secret: out.Secret}
}

// registerRaw posts a registration request and returns the answer.
func (e *env) registerRaw(t *testing.T, meta map[string]any) (int, []byte) {
	t.Helper()
	// No redirect_uris gets the test's; a nil one sends none.
	if v, ok := meta["redirect_uris"]; !ok {
		meta["redirect_uris"] = []string{testRedirect}
	} else if v == nil {
		delete(meta, "redirect_uris")
	}
	body, _ := json.Marshal(meta)
	resp, err := http.Post(e.url+"/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (e *env) publicClient(t *testing.T) client {
	return e.register(t, map[string]any{"client_name": "Test MCP client"})
}

func (e *env) confidentialClient(t *testing.T) client {
	return e.register(t, map[string]any{"client_name": "Confidential", "token_endpoint_auth_method": auth.AuthMethodBasic})
}

func (e *env) resource() string { return e.cfg.Resources[0] }
