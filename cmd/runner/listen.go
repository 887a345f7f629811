package main

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/sandgate/sandgate/runner/protocol"
)

// readSecret reads the secret of a runner that listens on TCP, or returns
// nil for one on a unix socket. It is read once, at start: a runner
// without its secret must not serve, and a file that changes later (sandbox
// code runs as the runner's uid) changes nothing.
func readSecret(cfg config) ([]byte, error) {
	if cfg.Listen == "" {
		return nil, nil
	}
	secret, err := protocol.ReadSecretFile(cfg.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("--secret-file: %w", err)
	}
	return secret, nil
}

// listen opens the listener cfg names: the unix socket, or the TCP address
// behind a protocol.SecretListener that checks secret. Its Addr is the
// bound address, with the real port when cfg.Listen asked for port 0.
func listen(cfg config, secret []byte) (net.Listener, error) {
	if cfg.Socket != "" {
		return listenUnix(cfg.Socket)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	return protocol.SecretListener(ln, secret), nil
}

// listenUnix opens the unix socket, replacing a stale one from an earlier
// run. The socket is world-connectable because its directory is the
// access control: the gateway creates it 0700 (or inside a 0700 parent)
// and mounts it into this sandbox only.
func listenUnix(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return ln, nil
}
