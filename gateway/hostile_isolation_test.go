package gateway_test

import (
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/sandgate/sandgate/auth/issuer"
)

// plantSecrets leaves a file, a listening unix socket (a path one and an
// abstract one) and a named process in c's sandbox.
func plantSecrets(t *testing.T, c *client.Client, tag string) {
	t.Helper()
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "/workspace/secret-" + tag, "content": tag}))
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"background": true, "command": `exec python3 -c '
import socket, sys, time
a = socket.socket(socket.AF_UNIX); a.bind("/tmp/sock-` + tag + `"); a.listen()
b = socket.socket(socket.AF_UNIX); b.bind("\0abstract-` + tag + `"); b.listen()
time.sleep(300)
' proc-` + tag}))
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _ := shell(t, c, "test -S /tmp/sock-"+tag+" && echo ready", nil)
		if r.Stdout == "ready\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the planted socket never appeared: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertCannotSee checks nothing of tag's sandbox is visible from c's.
// The tag reaches the commands through the environment, so that the
// commands' own arguments, which ps lists, do not hold it.
func assertCannotSee(t *testing.T, c *client.Client, tag string) {
	t.Helper()
	env := map[string]any{"env": map[string]any{"TAG": tag}}
	r, res := shell(t, c, `ps -eo args --no-headers; ls -a /workspace /tmp /dev/shm; cat /proc/net/unix; find / -xdev -name "*-$TAG" 2>/dev/null; true`, env)
	if res.IsError {
		t.Fatalf("look around: %s", text(res))
	}
	if strings.Contains(r.Stdout, tag) {
		t.Errorf("another sandbox's %q is visible:\n%s", tag, r.Stdout)
	}
	r, _ = shell(t, c, `python3 -c '
import os, socket
for addr in ("/tmp/sock-" + os.environ["TAG"], "\0abstract-" + os.environ["TAG"]):
    try:
        socket.socket(socket.AF_UNIX).connect(addr); print("connected")
    except OSError as e:
        print("refused:", e.strerror)
'`, env)
	if r.Stdout != "refused: No such file or directory\nrefused: Connection refused\n" {
		t.Errorf("connect to another sandbox's sockets: %q", r.Stdout)
	}
}

// TestHostileCrossSession checks that two sandboxes of one tenant, and of
// two tenants, cannot see each other's processes, files or sockets.
func TestHostileCrossSession(t *testing.T) {
	t.Parallel()
	t.Run("one tenant, two sessions", func(t *testing.T) {
		t.Parallel()
		tg := hostileGateway(t)
		stop := startCanary(t, tg)
		a, b := legacyClient(t, tg.URL), legacyClient(t, tg.URL)
		plantSecrets(t, a, "alpha")
		plantSecrets(t, b, "bravo")
		assertCannotSee(t, b, "alpha")
		assertCannotSee(t, a, "bravo")
		stop()
	})
	t.Run("two tenants", func(t *testing.T) {
		t.Parallel()
		og := startOAuthGateway(t)
		tok := func(name string) string {
			id, secret, err := issuer.AddClient(og.AuthDir, name, []string{"sandbox:exec", "sandbox:files:read", "sandbox:files:write"})
			if err != nil {
				t.Fatal(err)
			}
			tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {"sandbox:exec sandbox:files:read sandbox:files:write"}}, id+":"+secret)
			if code != http.StatusOK {
				t.Fatalf("token for %s: %d %+v", name, code, tr)
			}
			return tr.AccessToken
		}
		alice, mallory := bearerClient(t, og.URL, tok("alice")), bearerClient(t, og.URL, tok("mallory"))
		plantSecrets(t, alice, "alice")
		plantSecrets(t, mallory, "mallory")
		assertCannotSee(t, mallory, "alice")
		assertCannotSee(t, alice, "mallory")
	})
}

// TestHostilePathsStayInside checks that symlinks, `..` chains and
// absolute paths given to the file tools resolve inside the sandbox.
func TestHostilePathsStayInside(t *testing.T) {
	t.Parallel()
	tg := hostileGateway(t)
	c := legacyClient(t, tg.URL)
	r, _ := shell(t, c, "cat /etc/hostname; ln -s /proc/1/root/etc/hostname /workspace/hn; ln -s ../../../../../etc/hostname /workspace/up", nil)
	sandboxHost := r.Stdout
	hostHost, _ := os.ReadFile("/etc/hostname")
	if sandboxHost == "" || sandboxHost == string(hostHost) {
		t.Fatalf("sandbox hostname %q, host's %q: the probe cannot tell them apart", sandboxHost, hostHost)
	}
	for _, path := range []string{"/workspace/hn", "/workspace/up", "/workspace/../../../etc/hostname", "../../../../etc/hostname", "/etc/hostname", "/proc/1/root/etc/hostname"} {
		res := call(t, c, "read_file", map[string]any{"path": path})
		t.Logf("read_file %s: isError %v: %q", path, res.IsError, cut(text(res), 100))
		if !res.IsError && !strings.Contains(text(res), strings.TrimSpace(sandboxHost)) {
			t.Errorf("read_file %s: %q, want the sandbox's hostname %q", path, text(res), sandboxHost)
		}
		if strings.Contains(text(res), strings.TrimSpace(string(hostHost))) {
			t.Errorf("read_file %s read the host's hostname", path)
		}
	}
}
