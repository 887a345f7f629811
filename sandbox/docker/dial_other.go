//go:build !linux

package docker

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// dialSocket connects to the unix socket at path after checking that its
// last element is a socket and not a symlink. Unlike the Linux version this
// check races with a sandbox that swaps the file; sandboxes are only
// hardened on Linux hosts.
func dialSocket(ctx context.Context, path string) (net.Conn, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("stat socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("dial %s: not a socket (%v)", path, fi.Mode().Type())
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	return conn, nil
}
