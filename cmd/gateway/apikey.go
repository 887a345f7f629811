package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/apikey"
)

// defaultAPIKeyScopes are what `gateway apikey add` grants without
// --scopes: what the E2B SDKs' sandboxes, files and commands need.
var defaultAPIKeyScopes = []string{auth.ScopeFilesRead, auth.ScopeFilesWrite, auth.ScopeExec}

// apiKeyFile is where the API keys of the E2B-compatible API are kept in
// the var directory, beside the embedded authorization server's state.
func apiKeyFile(varDir string) string { return filepath.Join(authDir(varDir), "apikeys.json") }

// runAPIKey serves the operator subcommands for API keys. They work on the
// var directory and a running gateway sees the change on its next request.
//
//	gateway apikey add --tenant T [--name N] [--scopes S1,S2]   (prints the key once)
//	gateway apikey list
//	gateway apikey revoke ID
func runAPIKey(args []string, stdout io.Writer) error {
	const usage = "usage: gateway apikey add --tenant T [--name N] [--scopes S1,S2] | list | revoke ID"
	if len(args) < 1 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("apikey "+args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	varDir := fs.String("var", "var", "the gateway's var directory (or SANDGATE_VAR)")
	switch args[0] {
	case "add":
		tenant := fs.String("tenant", "", "the tenant the key's sandboxes belong to (required)")
		name := fs.String("name", "", "a label for the key, e.g. ci; its audit client ID is apikey:NAME")
		scopes := fs.String("scopes", strings.Join(defaultAPIKeyScopes, ","), "comma-separated scopes the key grants")
		if err := parseWithEnv(fs, args[1:]); err != nil {
			return err
		}
		return apiKeyAdd(apiKeyFile(*varDir), *name, *tenant, list(*scopes), stdout)
	case "list":
		if err := parseWithEnv(fs, args[1:]); err != nil {
			return err
		}
		return apiKeyList(apiKeyFile(*varDir), stdout)
	case "revoke":
		if err := parseWithEnv(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("usage: gateway apikey revoke [--var DIR] ID (see gateway apikey list)")
		}
		return apiKeyRevoke(apiKeyFile(*varDir), fs.Arg(0), stdout)
	}
	return fmt.Errorf("unknown command apikey %q; %s", args[0], usage)
}

func apiKeyAdd(path, name, tenant string, scopes []string, stdout io.Writer) error {
	// The store checks these too; checked here so the error names the flag.
	if tenant == "" {
		return errors.New("apikey add: --tenant is required")
	}
	if err := auth.CheckName("tenant", tenant); err != nil {
		return fmt.Errorf("apikey add: --tenant: %w", err)
	}
	if name != "" {
		if err := auth.CheckName("name", name); err != nil {
			return fmt.Errorf("apikey add: --name: %w", err)
		}
	}
	if len(scopes) == 0 {
		return fmt.Errorf("apikey add: --scopes: give at least one of %s", strings.Join(auth.AllScopes, ", "))
	}
	if err := auth.CheckScopes(scopes); err != nil {
		return fmt.Errorf("apikey add: --scopes: %w", err)
	}
	s, err := apikey.Open(path)
	if err != nil {
		return err
	}
	key, rec, err := s.Add(name, tenant, scopes)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "id:     %s\ntenant: %s\nscopes: %s\n\nE2B_API_KEY=%s\n", rec.ID, rec.Tenant, strings.Join(rec.Scopes, ","), key)
	fmt.Fprintln(stdout, "(the key is shown once and cannot be recovered; set E2B_API_KEY as above for the E2B SDK)")
	return nil
}

func apiKeyList(path string, stdout io.Writer) error {
	s, err := apikey.Open(path)
	if err != nil {
		return err
	}
	recs, err := s.List()
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		fmt.Fprintln(stdout, "no API keys; add one with: gateway apikey add --tenant T")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tTENANT\tSCOPES\tCREATED\tSTATUS")
	for _, r := range recs {
		status := "live"
		if r.Revoked() {
			status = "revoked " + r.RevokedAt.UTC().Format(time.RFC3339)
		}
		name := r.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, name, r.Tenant, strings.Join(r.Scopes, ","), r.CreatedAt.UTC().Format(time.RFC3339), status)
	}
	return w.Flush()
}

func apiKeyRevoke(path, id string, stdout io.Writer) error {
	s, err := apikey.Open(path)
	if err != nil {
		return err
	}
	if err := s.Revoke(id); err != nil {
		if errors.Is(err, apikey.ErrNotFound) {
			return fmt.Errorf("%w (see gateway apikey list)", err)
		}
		return err
	}
	fmt.Fprintf(stdout, "API key %s revoked; a running gateway refuses it from its next request.\n", id)
	fmt.Fprintln(stdout, "The sandboxes it created stop answering at once: their access tokens (E2B data plane) are refused from the next request.")
	fmt.Fprintln(stdout, "They keep running, with their files, until their timeout (at most --max-lifetime) and are then removed; no other key can reach them.")
	return nil
}
