package apikey_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/apikey"
	"github.com/sandgate/sandgate/auth/identity"
)

var keySyntax = regexp.MustCompile(`^e2b_[0-9a-f]{40}$`)

// open returns a store in a fresh directory, at a path whose directory does
// not exist yet.
func open(t *testing.T) *apikey.Store {
	t.Helper()
	s, err := apikey.Open(filepath.Join(t.TempDir(), "auth", "apikeys.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func add(t *testing.T, s *apikey.Store, name, tenant string, scopes ...string) (string, apikey.Record) {
	t.Helper()
	key, rec, err := s.Add(name, tenant, scopes)
	if err != nil {
		t.Fatalf("Add(%q, %q, %v): %v", name, tenant, scopes, err)
	}
	return key, rec
}

func TestAddLookupRevoke(t *testing.T) {
	t.Parallel()
	s := open(t)
	key, rec := add(t, s, "ci", "acme", auth.ScopeExec, auth.ScopeFilesRead, auth.ScopeExec)
	if !keySyntax.MatchString(key) {
		t.Fatalf("key %q is not e2b_ and 40 lowercase hex digits", key)
	}
	if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(rec.ID) || rec.Revoked() || rec.CreatedAt.IsZero() {
		t.Fatalf("record %+v: want a 12-digit hex ID, a creation time, not revoked", rec)
	}
	if want := []string{auth.ScopeExec, auth.ScopeFilesRead}; !slices.Equal(rec.Scopes, want) {
		t.Errorf("scopes %v, want %v without the repeat", rec.Scopes, want)
	}
	got, err := s.Lookup(key)
	if err != nil || got.ID != rec.ID || got.Tenant != "acme" || got.Name != "ci" {
		t.Fatalf("Lookup = %+v, %v; want %+v", got, err, rec)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].ID != rec.ID {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := s.Revoke(rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(key); !errors.Is(err, apikey.ErrUnknown) {
		t.Errorf("Lookup of a revoked key = %v, want ErrUnknown", err)
	}
	list, _ = s.List()
	if len(list) != 1 || !list[0].Revoked() {
		t.Fatalf("List after Revoke = %+v; want the key, revoked", list)
	}
	// Revoking again succeeds and keeps the first time.
	if err := s.Revoke(rec.ID); err != nil {
		t.Errorf("second Revoke: %v", err)
	}
	again, _ := s.List()
	if !again[0].RevokedAt.Equal(list[0].RevokedAt) {
		t.Errorf("second Revoke moved RevokedAt from %v to %v", list[0].RevokedAt, again[0].RevokedAt)
	}
	if err := s.Revoke("000000000000"); !errors.Is(err, apikey.ErrNotFound) {
		t.Errorf("Revoke of an unknown ID = %v, want ErrNotFound", err)
	}
}

func TestLookupRefuses(t *testing.T) {
	t.Parallel()
	s := open(t)
	key, _ := add(t, s, "", "acme", auth.ScopeExec)
	hex := strings.TrimPrefix(key, apikey.Prefix)
	other := apikey.Prefix + strings.Repeat("0", 40)
	tests := []struct {
		name, key string
		want      error
	}{
		{"never issued", other, apikey.ErrUnknown},
		{"one digit changed", key[:len(key)-1] + flip(key[len(key)-1]), apikey.ErrUnknown},
		{"empty", "", apikey.ErrMalformed},
		{"prefix only", apikey.Prefix, apikey.ErrMalformed},
		{"no prefix", hex, apikey.ErrMalformed},
		{"upper-case prefix", "E2B_" + hex, apikey.ErrMalformed},
		{"upper-case hex", apikey.Prefix + strings.ToUpper(hex), apikey.ErrMalformed},
		{"truncated", key[:len(key)-1], apikey.ErrMalformed},
		{"one digit too many", key + "0", apikey.ErrMalformed},
		{"not hex", apikey.Prefix + strings.Repeat("g", 40), apikey.ErrMalformed},
		{"trailing newline", key + "\n", apikey.ErrMalformed},
		{"leading space", " " + key, apikey.ErrMalformed},
		{"bearer scheme", "Bearer " + key, apikey.ErrMalformed},
		{"NUL inside", key[:10] + "\x00" + key[11:], apikey.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, err := s.Lookup(tt.key)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Lookup = %+v, %v; want %v", rec, err, tt.want)
			}
			if tt.key != "" && len(tt.key) > 8 && strings.Contains(err.Error(), tt.key[4:]) {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

func TestAddRefuses(t *testing.T) {
	t.Parallel()
	s := open(t)
	tests := []struct {
		name, label, tenant string
		scopes              []string
		want                string
	}{
		{"no tenant", "", "", []string{auth.ScopeExec}, "tenant is required"},
		{"tenant with a slash", "", "a/b", []string{auth.ScopeExec}, "tenant"},
		{"tenant of a static client", "", "sgc-0123", []string{auth.ScopeExec}, "reserved"},
		{"name with a space", "c i", "acme", []string{auth.ScopeExec}, "name"},
		{"no scopes", "", "acme", nil, "at least one scope"},
		{"unknown scope", "", "acme", []string{auth.ScopeExec, "sandbox:root"}, `"sandbox:root"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key, _, err := s.Add(tt.label, tt.tenant, tt.scopes)
			if err == nil || !strings.Contains(err.Error(), tt.want) || key != "" {
				t.Errorf("Add = %q, %v; want an error containing %q", key, err, tt.want)
			}
		})
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List after refused Adds = %+v, %v; want none", list, err)
	}
}

// TestSecondStoreSeesChanges stands for the CLI (one Store) and a running
// gateway (another) sharing the file.
func TestSecondStoreSeesChanges(t *testing.T) {
	t.Parallel()
	cli := open(t)
	gateway, err := apikey.Open(cli.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.Lookup(apikey.Prefix + strings.Repeat("a", 40)); !errors.Is(err, apikey.ErrUnknown) {
		t.Fatalf("Lookup before the file exists = %v, want ErrUnknown", err)
	}
	key, rec := add(t, cli, "ci", "acme", auth.ScopeExec)
	if got, err := gateway.Lookup(key); err != nil || got.ID != rec.ID {
		t.Fatalf("the gateway's Lookup after the CLI's Add = %+v, %v", got, err)
	}
	key2, _ := add(t, cli, "ci2", "acme", auth.ScopeExec)
	if err := cli.Revoke(rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.Lookup(key); !errors.Is(err, apikey.ErrUnknown) {
		t.Errorf("the gateway's Lookup after the CLI's Revoke = %v, want ErrUnknown", err)
	}
	if _, err := gateway.Lookup(key2); err != nil {
		t.Errorf("the gateway's Lookup of a live key = %v", err)
	}
}

func TestFileHoldsOnlyHashes(t *testing.T) {
	t.Parallel()
	s := open(t)
	key, _ := add(t, s, "ci", "acme", auth.ScopeExec)
	info, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %o, want 600", perm)
	}
	dir, err := os.Stat(filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if perm := dir.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode %o, want 700", perm)
	}
	data, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), strings.TrimPrefix(key, apikey.Prefix)) {
		t.Errorf("the file holds the key:\n%s", data)
	}
}

func TestConcurrentAddsFromTwoStores(t *testing.T) {
	t.Parallel()
	a := open(t)
	b, err := apikey.Open(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	const each = 10
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		keys []string
	)
	for _, s := range []*apikey.Store{a, b} {
		for range each {
			wg.Go(func() {
				key, _, err := s.Add("", "acme", []string{auth.ScopeExec})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				keys = append(keys, key)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	fresh, err := apikey.Open(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	if list, err := fresh.List(); err != nil || len(list) != 2*each {
		t.Fatalf("List has %d keys, %v; want %d", len(list), err, 2*each)
	}
	for _, key := range keys {
		if _, err := fresh.Lookup(key); err != nil {
			t.Errorf("a key added concurrently was lost: %v", err)
		}
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	if _, err := apikey.Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	path := filepath.Join(t.TempDir(), "apikeys.json")
	s, err := apikey.Open(path)
	if err != nil {
		t.Fatalf("Open of a missing file: %v", err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List of a missing file = %+v, %v", list, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the file: %v", err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := apikey.Open(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Open of a corrupt file = %v; want an error naming it", err)
	}
	// A running store refuses every key rather than trust a stale copy.
	if _, err := s.Lookup(apikey.Prefix + strings.Repeat("a", 40)); err == nil || errors.Is(err, apikey.ErrUnknown) {
		t.Errorf("Lookup with a corrupt file = %v; want a store error", err)
	}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	rec := apikey.Record{ID: "0123456789ab", Name: "ci", Tenant: "acme", Scopes: []string{auth.ScopeExec}}
	id := rec.Identity()
	want := identity.Identity{Issuer: apikey.Issuer, Subject: rec.ID, Tenant: "acme", ClientID: "apikey:ci", Scopes: []string{auth.ScopeExec}}
	if id.Issuer != want.Issuer || id.Subject != want.Subject || id.Tenant != want.Tenant || id.ClientID != want.ClientID || !slices.Equal(id.Scopes, want.Scopes) {
		t.Errorf("Identity = %+v, want %+v", id, want)
	}
	if !id.HasScope(auth.ScopeExec) || id.HasScope(auth.ScopeFilesWrite) {
		t.Errorf("Identity scopes %v", id.Scopes)
	}
	rec.Name = ""
	if got := rec.Identity().ClientID; got != "apikey:"+rec.ID {
		t.Errorf("ClientID without a name = %q, want apikey:%s", got, rec.ID)
	}
	if apikey.Issuer != "sandgate:apikey" {
		t.Errorf("Issuer = %q", apikey.Issuer)
	}
}
