//go:build linux

package docker

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// dialSocket connects to the unix socket at path without following a
// symlink in its last element.
//
// The socket dir is writable by the sandbox, so the sandbox can replace
// runner.sock with a symlink, say to another sandbox's socket or to
// /var/run/docker.sock, and a plain connect(2) on the host would follow it.
// Instead the path is opened with O_PATH|O_NOFOLLOW, the opened inode is
// checked to be a socket, and the connect goes through /proc/self/fd/N,
// which names that very inode: no window between check and use. The
// elements above the last one are the root-owned SocketDir and the dir
// Create made, which the sandbox cannot replace.
func dialSocket(ctx context.Context, path string) (net.Conn, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open socket %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat socket %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("dial %s: not a socket (mode %#o)", path, st.Mode&unix.S_IFMT)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	return conn, nil
}
