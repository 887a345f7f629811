package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// runClient serves the client subcommands that look at and remove
// registrations of the embedded authorization server (client add is in
// admin.go). They work on the state directory while a gateway runs.
//
//	gateway client list [--json]
//	gateway client revoke CLIENT_ID
func runClient(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("client "+args[0], flag.ContinueOnError)
	fs.SetOutput(stdout)
	varDir := fs.String("var", "var", "the gateway's var directory (or SANDGATE_VAR)")
	switch args[0] {
	case "list":
		asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
		if err := parseWithEnv(fs, args[1:]); err != nil {
			return err
		}
		infos, err := issuer.ListClients(authDir(*varDir))
		if err != nil {
			return err
		}
		if *asJSON {
			return printClientsJSON(infos, stdout)
		}
		return printClients(infos, stdout)
	case "revoke":
		if err := parseWithEnv(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("usage: gateway client revoke [--var DIR] CLIENT_ID (see gateway client list)")
		}
		res, err := issuer.RevokeClient(authDir(*varDir), fs.Arg(0))
		if err != nil {
			return err
		}
		printRevoked(fs.Arg(0), res, stdout)
		return nil
	}
	return fmt.Errorf("unknown command client %s; want client add, list or revoke", args[0])
}

// clientKind names how a client came to be, in the words of the list.
func clientKind(c issuer.ClientInfo) string {
	switch c.Kind {
	case auth.ClientDynamic:
		return "dynamic" // registered itself at /register
	case auth.ClientMetadata:
		return "cimd" // its client_id is the URL of its metadata document
	case auth.ClientStatic:
		if slices.Contains(c.GrantTypes, auth.GrantClientCreds) {
			return "ci" // gateway client add: client_credentials
		}
		return "operator"
	}
	return "unknown"
}

func printClients(infos []issuer.ClientInfo, stdout io.Writer) error {
	if len(infos) == 0 {
		fmt.Fprintln(stdout, "no clients; MCP clients register themselves, CI clients are made with: gateway client add --name ci")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLIENT_ID\tKIND\tNAME\tCREATED\tREFRESH_TOKENS\tSCOPES\tREDIRECT_URIS")
	for _, c := range infos {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.ID, clientKind(c), orDash(c.Name),
			c.CreatedAt.UTC().Format(time.RFC3339), c.RefreshTokens, orDash(strings.Join(c.Scopes, ",")),
			orDash(strings.Join(c.RedirectURIs, ",")))
	}
	return w.Flush()
}

// clientJSON is one row of `client list --json`.
type clientJSON struct {
	ClientID      string    `json:"client_id"`
	Kind          string    `json:"kind"`
	Name          string    `json:"name,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	RedirectURIs  []string  `json:"redirect_uris"`
	GrantTypes    []string  `json:"grant_types"`
	Scopes        []string  `json:"scopes"`
	RefreshTokens int       `json:"refresh_tokens"`
}

func printClientsJSON(infos []issuer.ClientInfo, stdout io.Writer) error {
	out := make([]clientJSON, 0, len(infos))
	for _, c := range infos {
		out = append(out, clientJSON{ClientID: c.ID, Kind: clientKind(c), Name: c.Name, CreatedAt: c.CreatedAt.UTC(),
			RedirectURIs: orEmpty(c.RedirectURIs), GrantTypes: orEmpty(c.GrantTypes), Scopes: orEmpty(c.Scopes),
			RefreshTokens: c.RefreshTokens})
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func printRevoked(id string, res issuer.RevokeResult, stdout io.Writer) {
	reg := "its registration is removed"
	if !res.Removed {
		reg = "it had no stored registration (a client ID metadata document client can sign in again, with a user's consent)"
	}
	fmt.Fprintf(stdout, "client %s revoked: %s; %d refresh token(s) ended.\n", id, reg, res.RefreshTokens)
	fmt.Fprintf(stdout, "Access tokens already issued to it are refused by the gateway from its next request. "+
		"They are JWTs valid for at most %s after issue: another resource server that checks only their "+
		"signature accepts them until then.\n", res.AccessTokenTTL)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
