package issuer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// TestRestart: a new Server on the same directory keeps the signing keys
// (old tokens verify), clients, users and refresh tokens.
func TestRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.confidentialClient(t)
	staticID, staticSecret, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	a := newAuthz(c)
	before := mustOK(t, e.exchange(t, a, e.code(t, a)))
	keysBefore := e.publicKeys(t)

	e.restart()

	if got := e.publicKeys(t); !slices.EqualFunc(got, keysBefore, func(x, y auth.PublicKey) bool { return x.ID == y.ID }) {
		t.Fatalf("keys changed across a restart: %v -> %v", keysBefore, got)
	}
	verify(t, before.AccessToken, e.publicKeys(t))
	verify(t, before.AccessToken, e.jwks(t))
	mustOK(t, e.refresh(t, c, before.RefreshToken, nil))

	// The dynamic client and the user still sign in; the static client
	// still gets tokens.
	a = newAuthz(c)
	mustOK(t, e.exchange(t, a, e.code(t, a)))
	mustOK(t, e.tokenRequest(t, client{id: staticID, secret: staticSecret},
		map[string][]string{"grant_type": {"client_credentials"}}))
}

// TestRotateKeysWhileRunning: after RotateKeys in "another process", new
// tokens carry the new kid and old tokens still verify.
func TestRotateKeysWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.publicClient(t)
	a := newAuthz(c)
	old := mustOK(t, e.exchange(t, a, e.code(t, a)))
	_, oldHeader := verify(t, old.AccessToken, e.publicKeys(t))

	newKID, err := issuer.RotateKeys(e.cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if newKID == oldHeader.KeyID {
		t.Fatal("RotateKeys returned the old kid")
	}
	fresh := mustOK(t, e.refresh(t, c, old.RefreshToken, nil))
	if _, h := verify(t, fresh.AccessToken, e.publicKeys(t)); h.KeyID != newKID {
		t.Errorf("new token kid %s, want %s", h.KeyID, newKID)
	}
	verify(t, old.AccessToken, e.publicKeys(t))
	verify(t, old.AccessToken, e.jwks(t))
	if n := len(e.publicKeys(t)); n != 2 {
		t.Errorf("%d published keys after one rotation, want 2", n)
	}
}

// TestRetiredKeysExpire: a retired key leaves the JWKS once every token
// it signed has expired, and RotateKeys then drops it from disk.
func TestRetiredKeysExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	oldKID := e.publicKeys(t)[0].ID
	if _, err := issuer.RotateKeys(e.cfg.Dir); err != nil {
		t.Fatal(err)
	}
	// Pretend the rotation happened longer ago than AccessTokenTTL plus
	// the margin, by editing keys.json as another process might.
	path := filepath.Join(e.cfg.Dir, "keys.json")
	var doc map[string]any
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range doc["keys"].([]any) {
		if k := k.(map[string]any); k["retired_at"] != nil {
			k["retired_at"] = time.Now().Add(-time.Hour).Format(time.RFC3339Nano)
		}
	}
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(path+".new", raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	for _, k := range e.publicKeys(t) {
		if k.ID == oldKID {
			t.Fatal("expired retired key is still published")
		}
	}
	if _, err := issuer.RotateKeys(e.cfg.Dir); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(path)
	if json.Unmarshal(raw, &doc); len(doc["keys"].([]any)) != 2 {
		t.Errorf("keys.json holds %d keys, want the current and one retired", len(doc["keys"].([]any)))
	}
}
