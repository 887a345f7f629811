package resource_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

// audience is the canonical URI of the protected resource in tests.
const audience = "http://127.0.0.1:8080/mcp"

// testKey is a real signing key pair.
type testKey struct {
	kid    string
	method jwt.SigningMethod
	priv   crypto.Signer
}

func (k testKey) public() crypto.PublicKey { return k.priv.Public() }

func (k testKey) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.public(), KeyID: k.kid, Algorithm: k.method.Alg(), Use: "sig"}
}

// newKey generates a key for alg (RS256, ES256 or EdDSA).
func newKey(t testing.TB, alg, kid string) testKey {
	t.Helper()
	var (
		priv crypto.Signer
		err  error
	)
	switch alg {
	case "RS256":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key type for %s", alg)
	}
	if err != nil {
		t.Fatalf("generate %s key: %v", alg, err)
	}
	return testKey{kid: kid, method: jwt.GetSigningMethod(alg), priv: priv}
}

// sign makes a JWS with key; a non-empty kid goes into the header.
func sign(t testing.TB, key testKey, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(key.method, claims)
	if key.kid != "" {
		tok.Header["kid"] = key.kid
	}
	s, err := tok.SignedString(key.priv)
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return s
}

// testIssuer is a real HTTP authorization server that serves RFC 8414
// metadata and a JWKS whose keys a test can change.
type testIssuer struct {
	srv  *httptest.Server
	path string // path of the issuer URL, "" or e.g. "/tenants/a"

	mu        sync.Mutex
	keys      []testKey
	rawKeys   []json.RawMessage // published as they are, after keys
	jwksDelay time.Duration
	jwksFail  bool

	jwksFetches atomic.Int32
}

// newIssuer starts an issuer whose metadata is at each of metaPaths, which
// may use {issuer} for the issuer URL's path; by default at the RFC 8414
// path-inserted location.
func newIssuer(t testing.TB, path string, metaPaths ...string) *testIssuer {
	t.Helper()
	is := &testIssuer{path: path}
	if len(metaPaths) == 0 {
		metaPaths = []string{"/.well-known/oauth-authorization-server" + path}
	}
	mux := http.NewServeMux()
	for _, p := range metaPaths {
		mux.HandleFunc("GET "+p, is.serveMetadata)
	}
	mux.HandleFunc("GET /jwks", is.serveJWKS)
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *testIssuer) URL() string { return is.srv.URL + is.path }

func (is *testIssuer) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"issuer":                   is.URL(),
		"jwks_uri":                 is.srv.URL + "/jwks",
		"token_endpoint":           is.URL() + "/token",
		"response_types_supported": []string{"code"},
	})
}

func (is *testIssuer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	is.jwksFetches.Add(1)
	is.mu.Lock()
	keys, raw, delay, fail := is.keys, is.rawKeys, is.jwksDelay, is.jwksFail
	is.mu.Unlock()
	if fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	// A slow JWKS makes concurrent verifications overlap one fetch.
	time.Sleep(delay)
	out := make([]any, 0, len(keys)+len(raw))
	for _, k := range keys {
		out = append(out, k.jwk())
	}
	for _, r := range raw {
		out = append(out, r)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": out})
}

// publish replaces the JWKS with keys.
func (is *testIssuer) publish(keys ...testKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = keys
}

func (is *testIssuer) set(f func(is *testIssuer)) {
	is.mu.Lock()
	defer is.mu.Unlock()
	f(is)
}

// verifier returns a JWTVerifier for is, after mod has adjusted its config.
func (is *testIssuer) verifier(t testing.TB, mod func(*resource.JWTConfig)) *resource.JWTVerifier {
	t.Helper()
	cfg := resource.JWTConfig{Issuer: is.URL(), Audience: audience, HTTPClient: is.srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	v, err := resource.NewJWTVerifier(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewJWTVerifier: %v", err)
	}
	return v
}

// claims returns valid access token claims for issuer.
func claims(issuer string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss":       issuer,
		"sub":       "user-1",
		"aud":       []string{audience},
		"exp":       now.Add(time.Hour).Unix(),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"client_id": "client-1",
		"scope":     auth.ScopeExec + " " + auth.ScopeFilesRead,
	}
}

// with returns a copy of c with changes applied; a nil value deletes.
func with(c jwt.MapClaims, changes map[string]any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// staticKeys is an in-process KeySource, as the embedded issuer provides.
type staticKeys []auth.PublicKey

func (s staticKeys) PublicKeys(context.Context) ([]auth.PublicKey, error) { return s, nil }

// noHTTP is a transport that fails the test if anything uses it.
type noHTTP struct{ t testing.TB }

func (n noHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("unexpected HTTP request to %s", r.URL)
	return nil, http.ErrNotSupported
}
