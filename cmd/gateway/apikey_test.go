package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestAPIKeyCommands(t *testing.T) {
	t.Parallel()
	varDir := t.TempDir()
	gw := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(t.Context(), args, &out, &out)
		return out.String(), err
	}
	out, err := gw("apikey", "add", "--var", varDir, "--tenant", "acme", "--name", "ci")
	if err != nil {
		t.Fatalf("apikey add: %v\n%s", err, out)
	}
	key := regexp.MustCompile(`\nE2B_API_KEY=(e2b_[0-9a-f]{40})\n`).FindStringSubmatch(out)
	id := regexp.MustCompile(`id: +([0-9a-f]{12})\n`).FindStringSubmatch(out)
	if key == nil || id == nil || !strings.Contains(out, "shown once") {
		t.Fatalf("apikey add printed:\n%s\nwant the ID, the key and how to use it", out)
	}
	if _, err := os.Stat(apiKeyFile(varDir)); err != nil {
		t.Errorf("the key file is not at apiKeyFile: %v", err)
	}

	out, err = gw("apikey", "list", "--var", varDir)
	if err != nil {
		t.Fatalf("apikey list: %v", err)
	}
	row := regexp.MustCompile(id[1] + `\s+ci\s+acme\s+sandbox:files:read,sandbox:files:write,sandbox:exec\s+\S+Z\s+live\n`)
	if !row.MatchString(out) || strings.Contains(out, key[1][4:]) {
		t.Fatalf("apikey list printed:\n%s\nwant one live row with the default scopes and no key", out)
	}

	if out, err = gw("apikey", "revoke", "--var", varDir, id[1]); err != nil || !strings.Contains(out, "revoked") || !strings.Contains(out, "stop answering at once") {
		t.Fatalf("apikey revoke = %v\n%s", err, out)
	}
	out, _ = gw("apikey", "list", "--var", varDir)
	if !regexp.MustCompile(id[1] + `.*revoked \d{4}-\d\d-\d\dT`).MatchString(out) {
		t.Fatalf("apikey list after revoke printed:\n%s\nwant the key marked revoked with a time", out)
	}
	if _, err := gw("apikey", "revoke", "--var", varDir, "000000000000"); err == nil || !strings.Contains(err.Error(), "apikey list") {
		t.Errorf("revoke of an unknown ID = %v; want an error pointing at apikey list", err)
	}
}

func TestAPIKeyCommandErrors(t *testing.T) {
	t.Parallel()
	varDir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing tenant", []string{"add", "--name", "ci"}, "--tenant is required"},
		{"bad tenant", []string{"add", "--tenant", "a b"}, "--tenant"},
		{"bad name", []string{"add", "--tenant", "acme", "--name", "c/i"}, "--name"},
		{"unknown scope", []string{"add", "--tenant", "acme", "--scopes", "sandbox:exec,sandbox:root"}, `--scopes: unknown scope "sandbox:root"`},
		{"empty scopes", []string{"add", "--tenant", "acme", "--scopes", ","}, "--scopes"},
		{"revoke without ID", []string{"revoke"}, "usage"},
		{"no subcommand", nil, "usage"},
		{"unknown subcommand", []string{"rotate"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"apikey"}
			if len(tt.args) > 0 {
				args = append(append(args, tt.args[0], "--var", varDir), tt.args[1:]...)
			}
			var out bytes.Buffer
			err := run(t.Context(), args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("gateway %s = %v; want an error containing %q", strings.Join(args, " "), err, tt.want)
			}
		})
	}
	if _, err := os.Stat(apiKeyFile(varDir)); !os.IsNotExist(err) {
		t.Errorf("a refused add created the key file: %v", err)
	}
}
