package resource_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

// rotatedIssuer returns an issuer that published k1 when the verifier was
// built and publishes k1 and k2 afterwards.
func rotatedIssuer(t *testing.T, interval time.Duration) (*testIssuer, *resource.JWTVerifier, testKey, testKey) {
	is := newIssuer(t, "")
	k1, k2 := newKey(t, "RS256", "k1"), newKey(t, "ES256", "k2")
	is.publish(k1)
	v := is.verifier(t, func(c *resource.JWTConfig) { c.MinRefreshInterval = interval })
	if n := is.jwksFetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times at construction, want 1", n)
	}
	is.publish(k1, k2)
	return is, v, k1, k2
}

func TestUnknownKidBurstSharesOneFetch(t *testing.T) {
	t.Parallel()
	is, v, _, k2 := rotatedIssuer(t, time.Hour)
	is.set(func(is *testIssuer) { is.jwksDelay = 100 * time.Millisecond })
	token := sign(t, k2, claims(is.URL()))

	const n = 50
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			_, err := v.Verify(t.Context(), token)
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Verify: %v", err)
		}
	}
	if got := is.jwksFetches.Load() - 1; got != 1 {
		t.Errorf("unknown kid caused %d JWKS fetches, want 1", got)
	}
}

func TestKeyRemovedStopsVerifyingAfterRefresh(t *testing.T) {
	t.Parallel()
	is, v, k1, k2 := rotatedIssuer(t, time.Hour)
	old := sign(t, k1, claims(is.URL()))
	is.publish(k2) // k1 withdrawn
	if _, err := v.Verify(t.Context(), old); err != nil {
		t.Fatalf("cached k1 should verify until a refresh: %v", err)
	}
	if _, err := v.Verify(t.Context(), sign(t, k2, claims(is.URL()))); err != nil {
		t.Fatalf("rotated-in k2: %v", err)
	}
	_, err := v.Verify(t.Context(), old)
	if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("withdrawn k1 after refresh: err = %v", err)
	}
	if got := is.jwksFetches.Load(); got != 2 {
		t.Errorf("JWKS fetched %d times, want 2", got)
	}
}

func TestUnknownKidRefetchIsRateBounded(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	is, v, k1, k2 := rotatedIssuer(t, interval)
	if _, err := v.Verify(t.Context(), sign(t, k2, claims(is.URL()))); err != nil {
		t.Fatalf("first unknown kid: %v", err)
	}
	k3 := newKey(t, "EdDSA", "k3")
	is.publish(k1, k2, k3)
	t3 := sign(t, k3, claims(is.URL()))
	for range 5 {
		if _, err := v.Verify(t.Context(), t3); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("second unknown kid within the interval: err = %v, want invalid", err)
		}
	}
	if got := is.jwksFetches.Load(); got != 2 {
		t.Fatalf("JWKS fetched %d times, want 2 (one at construction, one refetch)", got)
	}
	time.Sleep(interval + 50*time.Millisecond)
	if _, err := v.Verify(t.Context(), t3); err != nil {
		t.Fatalf("unknown kid after the interval: %v", err)
	}
	if got := is.jwksFetches.Load(); got != 3 {
		t.Errorf("JWKS fetched %d times, want 3", got)
	}
}

func TestStaleKeySetIsReloaded(t *testing.T) {
	t.Parallel()
	is, v, k1, k2 := rotatedIssuer(t, time.Millisecond)
	old := sign(t, k1, claims(is.URL()))
	resource.SetKeyMaxAge(v, 10*time.Millisecond)
	is.publish(k2)
	time.Sleep(20 * time.Millisecond)
	if _, err := v.Verify(t.Context(), old); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("withdrawn key in a stale set: err = %v, want invalid", err)
	}
}

func TestStaleKeysServeWhileIssuerIsDown(t *testing.T) {
	t.Parallel()
	is, v, k1, _ := rotatedIssuer(t, time.Millisecond)
	resource.SetKeyMaxAge(v, 10*time.Millisecond)
	is.set(func(is *testIssuer) { is.jwksFail = true })
	time.Sleep(20 * time.Millisecond)
	if _, err := v.Verify(t.Context(), sign(t, k1, claims(is.URL()))); err != nil {
		t.Fatalf("known key while the JWKS is down: %v", err)
	}
}

func TestUnknownKidWhileIssuerIsDownIsNotInvalid(t *testing.T) {
	t.Parallel()
	is, v, _, k2 := rotatedIssuer(t, time.Hour)
	is.set(func(is *testIssuer) { is.jwksFail = true })
	_, err := v.Verify(t.Context(), sign(t, k2, claims(is.URL())))
	if err == nil || errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("err = %v, want an unavailability error", err)
	}
}

// TestJWKSUnusableKeysAreSkipped publishes keys no token may be verified
// with next to a good one: symmetric, encryption-only, weak and of unknown
// type. The good key keeps working and the symmetric one is no HMAC key.
func TestJWKSUnusableKeysAreSkipped(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, "")
	good := newKey(t, "ES256", "good")
	secret := []byte("0123456789abcdef0123456789abcdef")
	is.publish(good)
	weakPriv, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weak := testKey{kid: "weak", method: jwt.SigningMethodRS256, priv: weakPriv}
	enc := newKey(t, "ES256", "enc")
	encJWK := enc.jwk()
	encJWK.Use, encJWK.Algorithm = "enc", ""
	is.set(func(is *testIssuer) {
		is.rawKeys = []json.RawMessage{
			json.RawMessage(`{"kty":"oct","kid":"hmac","alg":"HS256","k":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}`),
			json.RawMessage(`{"kty":"weird","kid":"w"}`),
			mustJSON(t, weak.jwk()),
			mustJSON(t, encJWK),
		}
	})
	v := is.verifier(t, nil)
	if _, err := v.Verify(t.Context(), sign(t, good, claims(is.URL()))); err != nil {
		t.Fatalf("good key: %v", err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(is.URL()))
	tok.Header["kid"] = "hmac"
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), s); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("HS256 with a published oct key: err = %v, want invalid", err)
	}
	for _, k := range []testKey{weak, enc} {
		_, err := v.Verify(t.Context(), sign(t, k, claims(is.URL())))
		if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("key %s: err = %v, want unknown key", k.kid, err)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeySourceNeedsNoHTTP(t *testing.T) {
	t.Parallel()
	rsaKey, edKey := newKey(t, "RS256", "r"), newKey(t, "EdDSA", "e")
	const issuer = "https://issuer.invalid"
	v, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{
		Issuer:     issuer,
		Audience:   audience,
		Keys:       staticKeys{{ID: "r", Algorithm: "RS256", Key: rsaKey.public()}, {ID: "e", Key: edKey.public()}},
		HTTPClient: &http.Client{Transport: noHTTP{t}},
	})
	if err != nil {
		t.Fatalf("NewJWTVerifier: %v", err)
	}
	for _, k := range []testKey{rsaKey, edKey} {
		if _, err := v.Verify(t.Context(), sign(t, k, claims(issuer))); err != nil {
			t.Errorf("Verify %s: %v", k.kid, err)
		}
	}
	unknown := newKey(t, "ES256", "x")
	if _, err := v.Verify(t.Context(), sign(t, unknown, claims(issuer))); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("unknown key: err = %v", err)
	}
}

// failingKeys is a KeySource whose backing store is down.
type failingKeys struct{}

func (failingKeys) PublicKeys(context.Context) ([]auth.PublicKey, error) {
	return nil, errors.New("key store down")
}

func TestKeySourceErrorAtConstruction(t *testing.T) {
	t.Parallel()
	_, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{Issuer: "https://i.invalid", Audience: audience, Keys: failingKeys{}})
	if err == nil || !strings.Contains(err.Error(), "key store down") {
		t.Fatalf("err = %v", err)
	}
}

// TestCachedTokenOfWithdrawnKey: a token verified (and cached) before its
// key was withdrawn is refused once the key set reloads, as an uncached
// one would be.
func TestCachedTokenOfWithdrawnKey(t *testing.T) {
	t.Parallel()
	is, v, k1, k2 := rotatedIssuer(t, time.Millisecond)
	old := sign(t, k1, claims(is.URL()))
	for range 2 {
		if _, err := v.Verify(t.Context(), old); err != nil {
			t.Fatalf("token of a published key: %v", err)
		}
	}
	resource.SetKeyMaxAge(v, 10*time.Millisecond)
	is.publish(k2)
	time.Sleep(20 * time.Millisecond)
	if _, err := v.Verify(t.Context(), old); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("cached token of a withdrawn key: err = %v, want invalid", err)
	}
}

// TestCachedTokenExpires: the cache keeps a token no longer than its exp.
func TestCachedTokenExpires(t *testing.T) {
	t.Parallel()
	is := newIssuer(t, "")
	key := newKey(t, "ES256", "")
	is.publish(key)
	v := is.verifier(t, func(c *resource.JWTConfig) { c.Leeway = time.Millisecond })
	c := claims(is.URL())
	c["exp"] = time.Now().Add(1500 * time.Millisecond).Unix()
	tok := sign(t, key, c)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("fresh token: %v", err)
	}
	time.Sleep(time.Until(time.Unix(c["exp"].(int64), 0)) + 100*time.Millisecond)
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("cached token past its exp: err = %v, want invalid", err)
	}
}
