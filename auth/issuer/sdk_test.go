package issuer_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// TestTypeScriptSDKOAuth runs the official MCP TypeScript SDK's OAuth
// helpers against the server: it must accept the metadata, register with
// offline_access, run the code flow with PKCE and a resource, and refresh.
func TestTypeScriptSDKOAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the MCP TypeScript SDK from npm; skipped in -short mode")
	}
	t.Parallel()
	node, npm := requireNode(t)
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "oauth.mjs"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "tssdk", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--prefer-offline")
	install.Dir = dir
	install.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}

	e := newEnv(t)
	cmd := exec.CommandContext(ctx, node, "oauth.mjs", e.url, e.resource(), testUser, testPassword)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node oauth.mjs: %v\n%s%s", err, out, stderr)
	}
	var got struct {
		RegisteredScope string `json:"registered_scope"`
		TokenScope      string `json:"token_scope"`
		RefreshRotated  bool   `json:"refresh_rotated"`
		AccessToken     string `json:"access_token"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("SDK script printed %s", out)
	}
	if !slices.Contains(strings.Fields(got.RegisteredScope), auth.ScopeOfflineAccess) ||
		!slices.Contains(strings.Fields(got.TokenScope), auth.ScopeOfflineAccess) || !got.RefreshRotated {
		t.Errorf("SDK saw registration scope %q, token scope %q, refresh rotated %t", got.RegisteredScope, got.TokenScope, got.RefreshRotated)
	}
	id, err := e.gatewayVerifier(t).Verify(t.Context(), got.AccessToken)
	if err != nil {
		t.Fatalf("gateway refuses the SDK's refreshed token: %v", err)
	}
	if id.Subject != testUser || !slices.Equal(id.Scopes, []string{auth.ScopeExec, auth.ScopeFilesRead}) {
		t.Errorf("identity %+v", id)
	}
}

// requireNode returns the paths of node and npm. Without them it skips,
// or fails where CI or REQUIRE_DOCKER=1 says every test must run.
func requireNode(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if err := errors.Join(errNode, errNpm); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("REQUIRE_DOCKER") == "1" {
			t.Fatalf("needs node and npm: %v [CI or REQUIRE_DOCKER=1 is set, so this fails instead of skipping]", err)
		}
		t.Skipf("needs node and npm: %v", err)
	}
	return node, npm
}
