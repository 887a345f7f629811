package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/egress"
)

// TestLocalEgressLimits checks each per-sandbox egress limit closes what
// exceeds it, with the reason in the answer or the audit record. The
// limits are set low on purpose: this tests the mechanism, not a default.
func TestLocalEgressLimits(t *testing.T) {
	world := newEgressWorld(t)
	tg := startLocalGateway(t, func(c *gateway.Config) {
		world.configure(t, c, egressCeiling...)
		c.Egress.Limits = egress.Limits{MaxConns: 2, IdleTimeout: time.Second, BytesPerMinute: 1 << 20}
	})
	c := legacyClient(t, tg.URL)

	t.Run("concurrent connections", func(t *testing.T) {
		r, _ := shell(t, c, "python3 -c "+shellQuote(tunnelScript+"held = [tunnel() for _ in range(3)]\nfor s, line, body in held: print(line, body)\n"), nil)
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "HTTP/1.1 200") || !strings.HasPrefix(lines[1], "HTTP/1.1 200") ||
			!strings.HasPrefix(lines[2], "HTTP/1.1 429") || !strings.Contains(lines[2], "limit 2") {
			t.Fatalf("stdout %q stderr %q; want two tunnels and a 429 naming the limit", r.Stdout, r.Stderr)
		}
	})

	t.Run("idle timeout", func(t *testing.T) {
		since := len(auditRecords(t, tg.AuditPath))
		// Opens a tunnel, sends nothing, and waits for the gateway to
		// close it: only the idle timeout can.
		r, _ := shell(t, c, "python3 -c "+shellQuote(tunnelScript+"s, line, _ = tunnel('idle.allowed.test:80')\ns.settimeout(30)\nprint(line, repr(s.recv(1)))\n"), nil)
		if !strings.Contains(r.Stdout, "HTTP/1.1 200") || !strings.Contains(r.Stdout, "b''") {
			t.Fatalf("stdout %q stderr %q; want the tunnel opened, then closed by the gateway", r.Stdout, r.Stderr)
		}
		ev := waitEgress(t, tg, since, "idle.allowed.test:80")
		if ev.Outcome != audit.OutcomeError || !strings.Contains(ev.Connection.Closed, "idle") {
			t.Errorf("audit %+v %+v; want closed for idleness", ev, ev.Connection)
		}
	})

	t.Run("byte budget", func(t *testing.T) {
		since := len(auditRecords(t, tg.AuditPath))
		r, _ := shell(t, c, "curl -sS -o /dev/null -w '%{size_download}' http://bulk.allowed.test/big; echo \" exit=$?\"", nil)
		if !strings.Contains(r.Stdout, "exit=18") { // transfer closed with data outstanding
			t.Fatalf("stdout %q stderr %q; want the download cut (curl exit 18)", r.Stdout, r.Stderr)
		}
		ev := waitEgress(t, tg, since, "bulk.allowed.test:80")
		if !strings.Contains(ev.Connection.Closed, "budget") || ev.Connection.BytesDown > 2<<20 {
			t.Errorf("audit %+v %+v; want cut by the byte budget after about 1 MiB", ev, ev.Connection)
		}
	})
}

// tunnelScript defines tunnel(dest): a CONNECT through the sandbox's
// proxy, returning the socket, the status line and the refusal body.
const tunnelScript = `
import os, socket, urllib.parse
p = urllib.parse.urlparse(os.environ["HTTP_PROXY"])
def tunnel(dest="allowed.test:80"):
    s = socket.create_connection((p.hostname, p.port))
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (dest, dest)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        c = s.recv(1)
        if not c:
            break
        head += c
    line = head.split(b"\r\n")[0].decode()
    body = b""
    if not line.startswith("HTTP/1.1 200"):
        s.settimeout(10)
        while True:
            c = s.recv(4096)
            if not c:
                break
            body += c
    return s, line, body.decode().strip()
`

// TestLocalEgressSurvivesReplacement: a sandbox whose runner died is
// replaced with the allowlist it had, not the tenant default.
func TestLocalEgressSurvivesReplacement(t *testing.T) {
	world := newEgressWorld(t)
	tg := startLocalGateway(t, func(c *gateway.Config) { world.configure(t, c, egressCeiling...) })
	c := legacyClient(t, tg.URL)
	mustOK(t, "sandbox_network", call(t, c, "sandbox_network", map[string]any{"allow": []string{"sub.allowed.test:80"}}))
	if err := tg.Local.Kill(onlySandbox(t, tg)); err != nil {
		t.Fatal(err)
	}
	// A read-only call replaces the dead sandbox whether or not the
	// gateway has noticed the death yet (it may run twice). A command
	// sent to a runner that dies under it is not run again: it may have
	// run, so it gets an error instead, and only the next call replaces.
	if got := allText(mustOK(t, "list_directory", call(t, c, "list_directory", nil))); !strings.Contains(got, "so it was replaced") {
		t.Fatalf("the first call after the runner's death does not say it was replaced: %q", got)
	}
	res := mustOK(t, "sandbox_network", call(t, c, "sandbox_network", nil))
	if !strings.Contains(text(res), "allows: sub.allowed.test:80") {
		t.Fatalf("after the replacement: %q", text(res))
	}
	r, res := shell(t, c, "curl -sS http://allowed.test/hello; curl -sS http://sub.allowed.test/hello", nil)
	if !strings.Contains(r.Stdout, "not in this sandbox's allowlist") || !strings.Contains(r.Stdout, "hello from sub.allowed.test") {
		t.Errorf("after the replacement: stdout %q, stderr %q; result (error %v): %s", r.Stdout, r.Stderr, res.IsError, text(res))
	}
}
