package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
)

// config is the runner's whole configuration.
type config struct {
	// Socket is the unix socket the runner serves on under Docker: its
	// directory, mounted into this sandbox only, is the access control.
	Socket string
	// Listen is the TCP address the runner serves on where the gateway
	// reaches it over the network (a Kubernetes pod's IP). Exactly one
	// of Socket and Listen is set.
	Listen string
	// SecretFile holds the sandbox's secret in hex (protocol.ParseSecret);
	// every TCP connection must send it first. Required with Listen,
	// refused with Socket, which needs none.
	SecretFile string
	Workspace  string
	// ProxyListen is where the sandbox's egress proxy listens. Inside a
	// container it is the fixed, documented 127.0.0.1:3128; tests that
	// run the runner on the host pass port 0.
	ProxyListen string
	// ExtraCA is a PEM file of CAs the sandbox trusts besides the
	// image's (mounted read-only by the provider); empty: none.
	ExtraCA string
	// AwaitBlocked is a HOST:PORT the sandbox's network policy forbids;
	// the runner serves only once it stops answering (isolation.go).
	// Empty: no wait (Docker, where the container has no network).
	AwaitBlocked string
	// Rlimits are resource limits the runner sets on itself, and so on
	// everything in the sandbox (rlimits.go); empty: the platform's.
	Rlimits []rlimit
}

// Validate reports the first flag that is missing, conflicting or
// malformed, naming the flag.
func (c config) Validate() error {
	switch {
	case c.Socket == "" && c.Listen == "":
		return errors.New("give --socket PATH (a unix socket, under Docker) or --listen ADDR (TCP, e.g. :7070, on Kubernetes)")
	case c.Socket != "" && c.Listen != "":
		return errors.New("give --socket or --listen, not both")
	case c.Listen != "" && c.SecretFile == "":
		return errors.New("--listen needs --secret-file: a TCP listener serves only connections that send the sandbox's secret")
	case c.Socket != "" && c.SecretFile != "":
		return errors.New("--secret-file goes with --listen only: a --socket is guarded by its directory, not by a secret")
	case c.Workspace == "":
		return errors.New("--workspace must not be empty")
	}
	if c.AwaitBlocked != "" {
		if _, _, err := net.SplitHostPort(c.AwaitBlocked); err != nil {
			return fmt.Errorf("--await-blocked %q: want HOST:PORT: %w", c.AwaitBlocked, err)
		}
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("--listen %q: want HOST:PORT or :PORT: %w", c.Listen, err)
		}
	}
	return nil
}

func parseConfig(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	// Flags only, no environment: the runner's environment is the
	// sandbox's, which its code controls, and the gateway passes both.
	fs.StringVar(&c.Socket, "socket", "", "unix socket to serve the runner protocol on")
	fs.StringVar(&c.Listen, "listen", "", "TCP address to serve the runner protocol on, e.g. :7070 (needs --secret-file)")
	fs.StringVar(&c.SecretFile, "secret-file", "", "file holding the sandbox's secret, 64 hex characters, that every --listen connection must send first")
	fs.StringVar(&c.Workspace, "workspace", "/workspace", "default working directory and base for relative paths")
	fs.StringVar(&c.ProxyListen, "proxy-listen", "127.0.0.1:3128", "address of the egress proxy the sandbox's programs use")
	fs.StringVar(&c.AwaitBlocked, "await-blocked", "", "HOST:PORT the sandbox's network policy forbids; serve only once it stops answering")
	var rlimits string
	fs.StringVar(&rlimits, "rlimits", "", "resource limits for everything in the sandbox, as nofile=N,fsize=BYTES,core=N (where the platform sets none)")
	fs.StringVar(&c.ExtraCA, "extra-ca", "", "PEM file of certificate authorities to trust besides the image's")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (subcommands: connect, install)", fs.Arg(0))
	}
	var err error
	if c.Rlimits, err = parseRlimits(rlimits); err != nil {
		return c, err
	}
	return c, c.Validate()
}
