package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestClientCommands: `client list` shows what registered itself and
// what the operator made; `client revoke` removes a registration and
// says how long its access tokens could live elsewhere.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	varDir := t.TempDir()
	gw := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(t.Context(), args, &out, &out)
		return out.String(), err
	}
	if out, _ := gw("client", "list", "--var", varDir); !strings.Contains(out, "no clients") {
		t.Errorf("client list of an empty directory printed:\n%s", out)
	}
	out, err := gw("client", "add", "--var", varDir, "--name", "ci", "--scopes", "sandbox:exec")
	if err != nil {
		t.Fatalf("client add: %v\n%s", err, out)
	}
	ci := regexp.MustCompile(`client_id: +(\S+)\n`).FindStringSubmatch(out)[1]
	dyn := registerWithGateway(t, varDir)

	out, err = gw("client", "list", "--var", varDir)
	if err != nil {
		t.Fatalf("client list: %v", err)
	}
	rows := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(ci) + `\s+ci\s+ci\s+\S+Z\s+0\s+sandbox:exec\s+-$`),
		regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(dyn) + `\s+dynamic\s+Agent One\s+\S+Z\s+0\s+sandbox:exec,offline_access\s+http://127.0.0.1:9/cb$`),
	}
	for _, row := range rows {
		if !row.MatchString(out) {
			t.Errorf("client list printed:\n%s\nwant a row matching %s", out, row)
		}
	}
	out, _ = gw("client", "list", "--var", varDir, "--json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 2 {
		t.Fatalf("client list --json printed %s (%v)", out, err)
	}

	out, err = gw("client", "revoke", "--var", varDir, dyn)
	if err != nil || !strings.Contains(out, "registration is removed") || !strings.Contains(out, "at most 10m0s") {
		t.Fatalf("client revoke = %v\n%s\nwant the removal and the access token lifetime", err, out)
	}
	if out, _ = gw("client", "list", "--var", varDir); strings.Contains(out, dyn) {
		t.Errorf("revoked client still listed:\n%s", out)
	}
	if _, err := gw("client", "revoke", "--var", varDir, dyn); err == nil || !strings.Contains(err.Error(), "client list") {
		t.Errorf("revoke of an unknown client = %v; want an error pointing at client list", err)
	}
	if _, err := gw("client", "revoke", "--var", varDir); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("revoke without an ID = %v; want usage", err)
	}
}

// registerWithGateway registers a client through the embedded issuer's
// /register, as the gateway serves it, and returns its client_id.
func registerWithGateway(t *testing.T, varDir string) string {
	t.Helper()
	cfg := config{PublicURL: "http://127.0.0.1:8080"}
	is, err := startIssuer(t.Context(), cfg, cfg.PublicURL, cfg.PublicURL+"/mcp", varDir, io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	body := `{"client_name":"Agent One","redirect_uris":["http://127.0.0.1:9/cb"],"scope":"sandbox:exec offline_access"}`
	req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	is.Handler().ServeHTTP(rec, req)
	var out struct {
		ClientID string `json:"client_id"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	return out.ClientID
}
