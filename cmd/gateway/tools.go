package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/manifest"
	"github.com/sandgate/sandgate/sandbox"
)

// runTools is `gateway tools check [--call-timeout D] DIR`: it checks a
// directory of custom tool manifests as the gateway would load them and
// fails when any is refused, for CI.
func runTools(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		return errors.New("usage: gateway tools check [--call-timeout D] DIR")
	}
	fs := flag.NewFlagSet("tools check", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var cfg gateway.Config
	fs.DurationVar(&cfg.Limits.CallTimeout, "call-timeout", sandbox.DefaultLimits.CallTimeout, "the gateway's --call-timeout, which bounds a manifest's timeout")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: gateway tools check [--call-timeout D] DIR")
	}
	dir := fs.Arg(0)
	rep, err := manifest.NewDir(dir, gateway.ManifestOptions(cfg)).Reload()
	if err != nil {
		return err
	}
	for _, m := range rep.Loaded {
		fmt.Fprintf(stdout, "ok      %s: tool %s (scope %s, category %s)\n", m.File, m.Name, m.Scope, m.Category)
	}
	for _, p := range rep.Problems {
		for _, line := range strings.Split(p.Error(), "\n") {
			fmt.Fprintf(stdout, "refused %s\n", line)
		}
	}
	if rep.Invalid > 0 {
		return fmt.Errorf("%s: %d of %d manifests refused", dir, rep.Invalid, rep.Invalid+len(rep.Loaded))
	}
	fmt.Fprintf(stdout, "%s: %d manifests, all valid\n", dir, len(rep.Loaded))
	return nil
}
