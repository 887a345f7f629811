package docker

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDialSocketBreakouts: the sandbox owns the contents of its socket
// dir, so whatever it puts at runner.sock, the gateway must connect only
// to a socket that is itself that file, never follow a link out of it.
func TestDialSocketBreakouts(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	// A socket outside the sandbox's dir, standing for another sandbox's
	// runner or the Docker socket.
	victim := filepath.Join(dir, "victim.sock")
	listen(t, victim)
	box := filepath.Join(dir, "box")
	if err := os.Mkdir(box, 0o700); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		prepare func(path string) error
		wantOK  bool
	}{
		{"real socket", func(p string) error { listen(t, p); return nil }, true},
		{"missing", func(string) error { return nil }, false},
		{"absolute symlink to socket", func(p string) error { return os.Symlink(victim, p) }, false},
		{"relative symlink to socket", func(p string) error { return os.Symlink("../victim.sock", p) }, false},
		{"symlink to dir", func(p string) error { return os.Symlink(dir, p) }, false},
		{"dangling symlink", func(p string) error { return os.Symlink("/nonexistent", p) }, false},
		{"regular file", func(p string) error { return os.WriteFile(p, nil, 0o600) }, false},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o600) }, false},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, false},
		{"hard link to socket", func(p string) error { return os.Link(victim, p) }, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := filepath.Join(box, string(rune('a'+i)))
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(sub, SocketName)
			if err := tt.prepare(path); err != nil {
				t.Fatal(err)
			}
			conn, err := dialSocket(t.Context(), path)
			if conn != nil {
				conn.Close()
			}
			if (err == nil) != tt.wantOK {
				t.Errorf("dialSocket: err = %v, want success %v", err, tt.wantOK)
			}
		})
	}
}

// The hard-link case connects to the victim, which is acceptable only
// because a sandbox cannot make one: the victim is outside every path the
// container can see, and link(2) needs both names in one mount.

// TestDialSocketMissingIsNotExist lets Dial map a removed sandbox to
// ErrNotFound.
func TestDialSocketMissingIsNotExist(t *testing.T) {
	t.Parallel()
	_, err := dialSocket(t.Context(), filepath.Join(shortTempDir(t), SocketName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

// TestNamePatternBreakouts: ids and instance names become one path
// element under SocketDir and must never escape it.
func TestNamePatternBreakouts(t *testing.T) {
	t.Parallel()
	bad := []string{"", ".", "..", "../x", "a/b", "/abs", "a\x00b", ".hidden", "-flag", "a b",
		"a\nb", "a\\b", strings.Repeat("a", 65), "é"}
	for _, s := range bad {
		if namePattern.MatchString(s) {
			t.Errorf("namePattern accepts %q", s)
		}
	}
	good := []string{"a", "0123456789abcdef0123456789abcdef", "conformance-1", "a.b_c", strings.Repeat("a", 64)}
	for _, s := range good {
		if !namePattern.MatchString(s) {
			t.Errorf("namePattern refuses %q", s)
		}
	}
}

// FuzzSocketHostDir: any id namePattern accepts names a direct child of
// SocketDir.
func FuzzSocketHostDir(f *testing.F) {
	for _, s := range []string{"a", "..", "a/../..", "0123456789abcdef", "a..b", "x/"} {
		f.Add(s)
	}
	p := &Provider{cfg: Config{SocketDir: "/run/sandgate-gw"}}
	f.Fuzz(func(t *testing.T, id string) {
		if !namePattern.MatchString(id) {
			return
		}
		dir := p.socketHostDir(id)
		if filepath.Dir(dir) != p.cfg.SocketDir || filepath.Base(dir) != id {
			t.Fatalf("id %q gives socket dir %q, not a direct child of %s", id, dir, p.cfg.SocketDir)
		}
	})
}

// listen serves a unix socket at path until t ends.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// shortTempDir is a temp dir with a path short enough for sockets, which
// t.TempDir (named after the test) may not be.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
