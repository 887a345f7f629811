package issuer_test

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// TestStateFiles: the directory is private, and no file holds a usable
// secret (client secrets, refresh tokens, passwords).
func TestStateFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec})
	if err != nil {
		t.Fatal(err)
	}
	c := e.publicClient(t)
	a := newAuthz(c)
	tok := mustOK(t, e.exchange(t, a, e.code(t, a)))

	info, err := os.Stat(e.cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("state directory mode %o, want 700", perm)
	}
	entries, err := os.ReadDir(e.cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, ent := range entries {
		info, err := ent.Info()
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode %o, want 600", ent.Name(), perm)
		}
		raw, _ := os.ReadFile(filepath.Join(e.cfg.Dir, ent.Name()))
		all.Write(raw)
	}
	for name, secret := range map[string]string{"client secret": secret, "refresh token": tok.RefreshToken, "password": testPassword} {
		if strings.Contains(all.String(), secret) {
			t.Errorf("the state directory holds a %s in clear", name)
		}
	}
	if !strings.Contains(all.String(), id) {
		t.Error("the static client is not in the state directory")
	}
}

// TestStateDirTightened: an existing directory open to others is narrowed.
func TestStateDirTightened(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := issuer.EnsureDevUser(dir); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("mode %o, want 700", info.Mode().Perm())
	}
}

// TestEnsureDevUser: only a first start creates "dev", and it can sign in.
func TestEnsureDevUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, _, created, err := issuer.EnsureDevUser(e.cfg.Dir); err != nil || created {
		t.Fatalf("EnsureDevUser with users present: created %t, %v", created, err)
	}
	dir := filepath.Join(t.TempDir(), "fresh")
	user, password, created, err := issuer.EnsureDevUser(dir)
	if err != nil || !created || user != "dev" || len(password) < 16 {
		t.Fatalf("EnsureDevUser on a new directory: %q %d chars, created %t, %v", user, len(password), created, err)
	}
	if _, again, created, _ := issuer.EnsureDevUser(dir); created || again != "" {
		t.Fatal("EnsureDevUser created the user twice or returned the password again")
	}

	e2 := newEnv(t, func(c *issuer.Config) { c.Dir = dir })
	b := e2.browser(t)
	if resp, body := e2.login(t, b, e2.loginPage(t, b, e2.publicClient(t)), user, password); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, `action="consent"`) {
		t.Fatalf("dev login: %d", resp.StatusCode)
	}
}

func TestAddUserValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := map[string][3]string{
		"empty name":      {"", "password1", ""},
		"space":           {"a b", "password1", ""},
		"url-like":        {"https://x", "password1", ""},
		"client prefix":   {"sgc-1234", "password1", ""},
		"short password":  {"carol", "short", ""},
		"long password":   {"carol", strings.Repeat("x", 73), ""},
		"bad tenant":      {"carol", "password1", "a/b"},
		"tenant a client": {"carol", "password1", "sgc-x"},
	}
	for name, args := range bad {
		if err := issuer.AddUser(dir, args[0], args[1], args[2]); err == nil {
			t.Errorf("%s: AddUser succeeded", name)
		}
	}
	if err := issuer.AddUser(dir, "carol", "password1", ""); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentOperators: operator writes from many goroutines (standing
// in for processes) serialise on the lock and lose nothing.
func TestConcurrentOperators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var wg sync.WaitGroup
	ids := make([]string, 10)
	for i := range ids {
		wg.Go(func() {
			id, _, err := issuer.AddClient(e.cfg.Dir, "ci", []string{auth.ScopeExec})
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
		wg.Go(func() {
			if _, err := issuer.RotateKeys(e.cfg.Dir); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	store := *e.store.Load()
	for _, id := range ids {
		if _, err := store.GetClient(t.Context(), id); err != nil {
			t.Errorf("client %s lost: %v", id, err)
		}
	}
	if n := len(e.publicKeys(t)); n != 11 {
		t.Errorf("%d published keys after 10 rotations, want 11", n)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := map[string]issuer.Config{
		"http non-loopback": {Issuer: "http://gw.example.com", Resources: []string{"https://gw.example.com/mcp"}, Dir: dir},
		"issuer path":       {Issuer: "https://gw.example.com/auth", Resources: []string{"https://gw.example.com/mcp"}, Dir: dir},
		"trailing slash":    {Issuer: "https://gw.example.com/", Resources: []string{"https://gw.example.com/mcp"}, Dir: dir},
		"no resources":      {Issuer: "https://gw.example.com", Dir: dir},
		"http resource":     {Issuer: "https://gw.example.com", Resources: []string{"http://gw.example.com/mcp"}, Dir: dir},
		"no dir":            {Issuer: "https://gw.example.com", Resources: []string{"https://gw.example.com/mcp"}},
		"protocol scope":    {Issuer: "https://gw.example.com", Resources: []string{"https://gw.example.com/mcp"}, Dir: dir, Scopes: []string{"openid"}},
	}
	for name, cfg := range bad {
		if _, err := issuer.New(t.Context(), cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		} else if name == "http non-loopback" && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("http error does not mention loopback: %v", err)
		}
	}
	good := issuer.Config{Issuer: "https://gw.example.com", Resources: []string{"https://gw.example.com/mcp"}, Dir: dir,
		Logger: slog.New(slog.DiscardHandler)}
	if _, err := issuer.New(t.Context(), good); err != nil {
		t.Errorf("https issuer: %v", err)
	}
}
