package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/issuer"
)

// runAdmin serves the operator subcommands of the embedded authorization
// server. They work on the state directory and a running gateway picks
// the change up.
//
//	gateway client add --name NAME --scopes S1,S2   (prints the secret once)
//	gateway client list | revoke CLIENT_ID          (client.go)
//	gateway keys rotate
//	gateway user add NAME [--tenant T]              (password from stdin)
func runAdmin(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) < 2 {
		return errors.New("usage: gateway client add|list|revoke | keys rotate | user add NAME")
	}
	if args[0] == "client" && (args[1] == "list" || args[1] == "revoke") {
		return runClient(args[1:], stdout)
	}
	fs := flag.NewFlagSet(args[0]+" "+args[1], flag.ContinueOnError)
	fs.SetOutput(stdout)
	varDir := fs.String("var", "var", "the gateway's var directory (or SANDGATE_VAR)")
	switch args[0] + " " + args[1] {
	case "client add":
		name := fs.String("name", "", "client name, e.g. ci")
		scopes := fs.String("scopes", strings.Join(auth.AllScopes, ","), "comma-separated scopes the client may be granted")
		if err := parseWithEnv(fs, args[2:]); err != nil {
			return err
		}
		if *name == "" {
			return errors.New("client add: --name is required")
		}
		for _, s := range list(*scopes) {
			if !contains(auth.AllScopes, s) {
				return fmt.Errorf("client add: unknown scope %q (known: %s)", s, strings.Join(auth.AllScopes, ", "))
			}
		}
		id, secret, err := issuer.AddClient(authDir(*varDir), *name, list(*scopes))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "client_id:     %s\nclient_secret: %s\n(the secret is shown once; use the client_credentials grant at the token endpoint)\n", id, secret)
		return nil
	case "keys rotate":
		if err := parseWithEnv(fs, args[2:]); err != nil {
			return err
		}
		kid, err := issuer.RotateKeys(authDir(*varDir))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "new signing key %s is current; previous keys verify until their tokens expire\n", kid)
		return nil
	case "user add":
		tenant := fs.String("tenant", "", "the user's tenant (default: the user name)")
		if err := parseWithEnv(fs, args[2:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("usage: gateway user add NAME [--tenant T] < password")
		}
		password, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		password = strings.TrimRight(password, "\r\n")
		if len(password) < 12 {
			return errors.New("user add: give a password of at least 12 characters on stdin")
		}
		t := *tenant
		if t == "" {
			t = fs.Arg(0)
		}
		if err := issuer.AddUser(authDir(*varDir), fs.Arg(0), password, t); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "user %s added (tenant %s)\n", fs.Arg(0), t)
		return nil
	}
	return fmt.Errorf("unknown command %q; want client add, client list, client revoke, keys rotate or user add", args[0]+" "+args[1])
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}
