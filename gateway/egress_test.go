package gateway_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// egressCeiling is what the egress tests' operator allows every tenant.
var egressCeiling = []string{"allowed.test", "*.allowed.test", "rebind.test", "private.test", "metadata.test", "mapped.test"}

// TestEgressThroughProxy drives real tools in a real sandbox through the
// egress proxy: what the policy allows works by every way in (CONNECT,
// absolute-URI HTTP, SOCKS5, `runner connect`), and everything else is
// refused with an answer the agent can act on and an audit record.
func TestEgressThroughProxy(t *testing.T) {
	world := newEgressWorld(t)
	tg := startGateway(t, func(c *gateway.Config) { world.configure(t, c, egressCeiling...) })
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "/workspace/ca.pem", "content": world.CAPEM}))
	gwPort := mustPort(t, tg.URL)

	allowed := []struct{ name, command, want, asked, rule, proxy string }{
		{"https via CONNECT", "curl -sS --cacert ca.pem https://allowed.test/hello", "hello from allowed.test over https", "allowed.test:443", "allowed.test", "connect"},
		{"plain http via absolute URI", "curl -sS http://sub.allowed.test/echo-host", "host=sub.allowed.test uri=/echo-host connection=close", "sub.allowed.test:80", "*.allowed.test", "http"},
		{"socks5 with the name", "curl -sS --cacert ca.pem -x socks5h://127.0.0.1:3128 https://allowed.test/hello", "hello from allowed.test over https", "allowed.test:443", "allowed.test", "socks5"},
		{"python requests the standard way", "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://allowed.test/hello\").read().decode())'", "hello from allowed.test over http", "allowed.test:80", "allowed.test", "http"},
		{"runner connect, as ssh and git use it", `printf 'GET /hello HTTP/1.0\r\nHost: allowed.test\r\n\r\n' | sh -c "$GIT_PROXY_COMMAND allowed.test 80"`, "hello from allowed.test over http", "allowed.test:80", "allowed.test", "connect"},
	}
	for _, tc := range allowed {
		t.Run(tc.name, func(t *testing.T) {
			since := len(auditRecords(t, tg.AuditPath))
			r, res := shell(t, c, tc.command, nil)
			if r.ExitCode != 0 || !strings.Contains(r.Stdout, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", r.ExitCode, r.Stdout, r.Stderr, tc.want)
			}
			_ = res
			ev := waitEgress(t, tg, since, tc.asked)
			cn := ev.Connection
			if ev.Outcome != audit.OutcomeOK || cn.Status != 200 || cn.Rule != tc.rule || cn.IP != "127.0.0.1" || cn.Proxy != tc.proxy || cn.BytesDown == 0 || cn.BytesUp == 0 {
				t.Errorf("audit record %+v %+v; want ok, status 200, rule %s, ip 127.0.0.1, proxy %s, bytes both ways", ev, cn, tc.rule, tc.proxy)
			}
			if cn.Port == 443 && cn.SNI != "allowed.test" {
				t.Errorf("audit SNI %q, want allowed.test", cn.SNI)
			}
			if ev.SandboxID == "" || ev.Principal.Subject == "" {
				t.Errorf("audit record names no sandbox or principal: %+v", ev)
			}
		})
	}

	refused := []struct{ name, command, want, asked string }{
		{"host not on the list", "curl -sS http://other.test/hello", "not in this sandbox's allowlist", "other.test:80"},
		{"host not on the list, https", "curl -sS --cacert ca.pem https://other.test/hello; echo exit=$?", "exit=56", "other.test:443"},
		{"cloud metadata address", "curl -sS http://169.254.169.254/latest/meta-data/", "link-local", "169.254.169.254:80"},
		{"the host's loopback", fmt.Sprintf("curl -sS --noproxy '' http://127.0.0.1:%d/healthz", gwPort), "loopback", fmt.Sprintf("127.0.0.1:%d", gwPort)},
		{"a numeric form of loopback", "curl -sS --noproxy '' http://2130706433/", "loopback", ""},
		{"a private address literal", "curl -sS http://10.1.2.3/", "private", "10.1.2.3:80"},
		{"a name that resolves to a private address", "curl -sS http://private.test/", "private", "private.test:80"},
		{"a name that resolves to the metadata address", "curl -sS http://metadata.test/", "link-local", "metadata.test:80"},
		{"a name that resolves to an IPv4-mapped IPv6 address", "curl -sS http://mapped.test/", "IPv4-mapped", "mapped.test:80"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			since := len(auditRecords(t, tg.AuditPath))
			r, _ := shell(t, c, tc.command, nil)
			if !strings.Contains(r.Stdout+r.Stderr, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", r.ExitCode, r.Stdout, r.Stderr, tc.want)
			}
			if tc.asked == "" {
				return
			}
			ev := waitEgress(t, tg, since, tc.asked)
			if ev.Outcome != audit.OutcomeDenied || ev.DenyReason == "" || ev.Connection.Status != 403 || ev.Connection.BytesDown != 0 {
				t.Errorf("audit record %+v %+v; want denied with a reason and status 403", ev, ev.Connection)
			}
		})
	}

	t.Run("http_request", func(t *testing.T) {
		since := len(auditRecords(t, tg.AuditPath))
		res := mustOK(t, "http_request", call(t, c, "http_request", map[string]any{"url": "https://allowed.test/hello", "ca_file": "/workspace/ca.pem"}))
		meta := structuredAs[struct {
			Status       int    `json:"status"`
			BodyEncoding string `json:"body_encoding"`
		}](t, res)
		if meta.Status != 200 || meta.BodyEncoding != "text" || !strings.Contains(text(res), "hello from allowed.test over https") {
			t.Errorf("http_request: %+v %q", meta, text(res))
		}
		if ev := waitEgress(t, tg, since, "allowed.test:443"); ev.Connection.SNI != "allowed.test" {
			t.Errorf("http_request's connection: %+v", ev.Connection)
		}
		res = call(t, c, "http_request", map[string]any{"url": "https://other.test/hello", "ca_file": "/workspace/ca.pem"})
		if !res.IsError || !strings.Contains(text(res), "403") || !strings.Contains(text(res), "not in this sandbox's allowlist") {
			t.Errorf("http_request to a host not allowed: isError %v, %q; want the proxy's reason", res.IsError, text(res))
		}
	})

	t.Run("no route around the proxy", func(t *testing.T) {
		r, _ := shell(t, c, "curl -sS --noproxy '*' --connect-timeout 5 http://allowed.test/hello; echo exit=$?", nil)
		if !strings.Contains(r.Stdout, "exit=6") { // no resolver at all
			t.Errorf("direct by name: %q %q, want curl exit 6 (could not resolve)", r.Stdout, r.Stderr)
		}
		r, _ = shell(t, c, fmt.Sprintf("curl -sS --noproxy '*' --connect-timeout 5 http://%s/healthz; echo exit=$?", hostAddr(t, gwPort)), nil)
		if !strings.Contains(r.Stdout, "exit=7") { // no interface to send it on
			t.Errorf("direct to the host's address: %q %q, want curl exit 7 (network unreachable)", r.Stdout, r.Stderr)
		}
	})

	t.Run("rebinding resolver", func(t *testing.T) {
		r, _ := shell(t, c, "curl -sS http://rebind.test/hello", nil)
		if !strings.Contains(r.Stdout, "hello from rebind.test") {
			t.Fatalf("first lookup (loopback test server): %q %q", r.Stdout, r.Stderr)
		}
		r, _ = shell(t, c, "curl -sS http://rebind.test/hello", nil)
		if !strings.Contains(r.Stdout, "link-local") {
			t.Fatalf("after rebinding to the metadata address: %q %q, want a link-local refusal", r.Stdout, r.Stderr)
		}
	})

	t.Run("TLS server name differs from the CONNECT host", func(t *testing.T) {
		since := len(auditRecords(t, tg.AuditPath))
		r, _ := shell(t, c, "python3 -c "+shellQuote(sniScript), nil)
		if !strings.Contains(r.Stdout, "HTTP/1.1 200") || !strings.Contains(r.Stdout, "ACCESS_DENIED") {
			t.Fatalf("stdout %q stderr %q; want the tunnel opened and the handshake refused with access_denied", r.Stdout, r.Stderr)
		}
		ev := waitEgress(t, tg, since, "allowed.test:443")
		if ev.Outcome != audit.OutcomeDenied || ev.Connection.SNI != "other.test" || !strings.Contains(ev.DenyReason, "server name") {
			t.Errorf("audit %+v %+v; want denied, SNI other.test", ev, ev.Connection)
		}
	})

	t.Run("asking beyond the ceiling", func(t *testing.T) {
		res := call(t, c, "sandbox_network", map[string]any{"allow": []string{"allowed.test", "evil.test"}})
		if !res.IsError || !strings.Contains(text(res), "evil.test") || !strings.Contains(text(res), "*.allowed.test") {
			t.Errorf("sandbox_network beyond the ceiling: isError %v, %q; want an error naming the rule and what is allowed", res.IsError, text(res))
		}
		res = call(t, c, "sandbox_create", map[string]any{"network": map[string]any{"allow": []string{"10.0.0.0/8"}}})
		if !res.IsError || !strings.Contains(text(res), "always refused") {
			t.Errorf("sandbox_create with a private range: isError %v, %q", res.IsError, text(res))
		}
	})

	t.Run("narrowing a live sandbox", func(t *testing.T) {
		mustOK(t, "sandbox_network", call(t, c, "sandbox_network", map[string]any{"allow": []string{"sub.allowed.test:80"}}))
		info := structuredAs[struct {
			Network struct{ Allow, Ceiling []string } `json:"network"`
		}](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))
		if !slices.Equal(info.Network.Allow, []string{"sub.allowed.test:80"}) || len(info.Network.Ceiling) != len(egressCeiling) {
			t.Errorf("sandbox_info network = %+v", info.Network)
		}
		r, _ := shell(t, c, "curl -sS http://allowed.test/hello; curl -sS http://sub.allowed.test/hello", nil)
		if !strings.Contains(r.Stdout, "not in this sandbox's allowlist (sub.allowed.test:80)") || !strings.Contains(r.Stdout, "hello from sub.allowed.test") {
			t.Errorf("after narrowing: %q %q", r.Stdout, r.Stderr)
		}
		mustOK(t, "sandbox_network", call(t, c, "sandbox_network", map[string]any{"allow": egressCeiling}))
	})
}

// TestEgressDefaultDeny: with the shipped defaults a sandbox reaches
// nothing, and says why.
func TestEgressDefaultDeny(t *testing.T) {
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	r, _ := shell(t, c, "curl -sS -w ' status=%{http_code}' http://example.test/", nil)
	if !strings.Contains(r.Stdout, "may not reach the network") || !strings.Contains(r.Stdout, "status=403") {
		t.Errorf("default egress: %q %q; want a 403 saying the allowlist is empty", r.Stdout, r.Stderr)
	}
	res := mustOK(t, "sandbox_network", call(t, c, "sandbox_network", nil))
	if !strings.Contains(text(res), "no network access") {
		t.Errorf("sandbox_network: %q", text(res))
	}
}

// sniScript opens a CONNECT tunnel to allowed.test:443 and then asks the
// server, in the TLS handshake, for other.test: domain fronting.
const sniScript = `
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(head.split(b"\r\n")[0].decode())
ctx = ssl.create_default_context(cafile="/workspace/ca.pem")
try:
    ctx.wrap_socket(s, server_hostname="other.test")
    print("handshake completed")
except ssl.SSLError as e:
    print("tls error:", e.reason)
`

// waitEgress waits for the egress record of a connection to asked
// (host:port as the sandbox sent it) written after the first since
// records. The record is written when the connection ends, which may be
// just after the tool call that made it returns.
func waitEgress(t testing.TB, tg *testGateway, since int, asked string) audit.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs := auditRecords(t, tg.AuditPath)
		for _, ev := range evs[min(since, len(evs)):] {
			if ev.Kind == audit.KindEgress && ev.Connection != nil && ev.Connection.Asked == asked {
				return ev
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no egress audit record for %s", asked)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustPort(t testing.TB, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(u.Host)
	var n int
	fmt.Sscan(p, &n)
	return n
}

// hostAddr is an address of this host that is not loopback (the Docker
// bridge's, typically), with port.
func hostAddr(t testing.TB, port int) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return net.JoinHostPort(ipn.IP.String(), fmt.Sprint(port))
		}
	}
	t.Fatal("no non-loopback IPv4 address on this host")
	return ""
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestEgressBrowser: Chromium in the sandbox goes through the proxy, so
// browser_navigate reaches an allowed site, over HTTPS with the
// operator's CA (--sandbox-ca), and shows the refusal of another.
func TestEgressBrowser(t *testing.T) {
	sandboxtest.RequireImage(t, browserImage)
	world := newEgressWorld(t)
	tg := startGatewayCA(t, nil, world.CAFile, func(c *gateway.Config) {
		world.configure(t, c, egressCeiling...)
		c.Images = append(c.Images, browserImage)
		c.Limits.MemoryBytes, c.Limits.Pids, c.Limits.CallTimeout = 512<<20, 256, time.Minute
	})
	c := modernClient(t, tg.URL)
	res := mustOK(t, "sandbox_create", call(t, c, "sandbox_create", map[string]any{"image": browserImage}))
	b := &browserBox{t: t, tg: tg, c: c, id: structuredAs[map[string]any](t, res)["sandbox_id"].(string)}

	since := len(auditRecords(t, tg.AuditPath))
	nav := structuredAs[map[string]any](t, b.ok("browser_navigate", map[string]any{"url": "http://allowed.test/hello"}))
	if nav["status"] != float64(200) {
		t.Errorf("navigate to an allowed site: %v", nav)
	}
	if snap := text(b.ok("browser_snapshot", nil)); !strings.Contains(snap, "hello from allowed.test over http") {
		t.Errorf("snapshot of the allowed page: %q", snap)
	}
	waitEgress(t, tg, since, "allowed.test:80")

	nav = structuredAs[map[string]any](t, b.ok("browser_navigate", map[string]any{"url": "https://allowed.test/hello"}))
	if nav["status"] != float64(200) {
		t.Errorf("navigate to an allowed https site: %v", nav)
	}
	if snap := text(b.ok("browser_snapshot", nil)); !strings.Contains(snap, "hello from allowed.test over https") {
		t.Errorf("snapshot of the allowed https page: %q", snap)
	}

	nav = structuredAs[map[string]any](t, b.ok("browser_navigate", map[string]any{"url": "http://other.test/hello"}))
	if nav["status"] != float64(403) {
		t.Errorf("navigate to a site not allowed: %v", nav)
	}
	if snap := text(b.ok("browser_snapshot", nil)); !strings.Contains(snap, "not in this sandbox's allowlist") {
		t.Errorf("snapshot of the refusal: %q", snap)
	}

	// The same CAs serve the sandbox's other tools with no option.
	r := structuredAs[execResult](t, b.ok("run_shell", map[string]any{"command": "curl -sS https://allowed.test/hello && python3 -c 'import urllib.request as u; print(u.urlopen(\"https://allowed.test/hello\").read().decode())'"}))
	if strings.Count(r.Stdout, "hello from allowed.test over https") != 2 {
		t.Errorf("curl and python with the operator's CA: %q %q", r.Stdout, r.Stderr)
	}
	if res := b.ok("http_request", map[string]any{"url": "https://allowed.test/hello"}); !strings.Contains(text(res), "over https") {
		t.Errorf("http_request with the operator's CA: %q", text(res))
	}
}

// TestEgressPolicySurvivesRestart: a sandbox's allowlist and tenant live
// in its labels, and a later change in the gateway's var dir, so a
// restarted gateway that adopts it applies the list last set, not the
// tenant default.
func TestEgressPolicySurvivesRestart(t *testing.T) {
	world := newEgressWorld(t)
	configure := func(c *gateway.Config) { world.configure(t, c, egressCeiling...) }
	tg := startGateway(t, configure)
	c := modernClient(t, tg.URL)
	res := mustOK(t, "sandbox_create", call(t, c, "sandbox_create", map[string]any{"network": map[string]any{"allow": []string{"allowed.test:80"}}}))
	id := structuredAs[map[string]any](t, res)["sandbox_id"].(string)
	// A change after creation is not in the labels; it must survive too.
	mustOK(t, "sandbox_network", call(t, c, "sandbox_network", map[string]any{"sandbox_id": id, "allow": []string{"sub.allowed.test:80", "rebind.test:80"}}))
	mustOK(t, "sandbox_network", call(t, c, "sandbox_network", map[string]any{"sandbox_id": id, "allow": []string{"sub.allowed.test:80"}}))
	// A background process that goes online only after the restart.
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"sandbox_id": id, "background": true,
		"command": "while [ ! -e /workspace/go ]; do sleep 0.1; done; until curl -sf http://sub.allowed.test/hello > /workspace/bg.out; do sleep 0.2; done"}))
	tg.crash()

	tg2 := restart(t, tg, configure)
	// No call yet: the adopted sandbox's egress must be up on its own.
	ws := filepath.Join(tg2.VarDir, "workspaces", id, "mnt")
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := os.ReadFile(filepath.Join(ws, "bg.out"))
		if strings.Contains(string(out), "hello from sub.allowed.test") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background process never got through after the restart (bg.out %q)", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c2 := modernClient(t, tg2.URL)
	r, _ := shell(t, c2, "curl -sS http://sub.allowed.test/hello; curl -sS http://allowed.test/hello", map[string]any{"sandbox_id": id})
	if !strings.Contains(r.Stdout, "hello from sub.allowed.test") || !strings.Contains(r.Stdout, "not in this sandbox's allowlist (sub.allowed.test:80)") {
		t.Errorf("after the restart: %q %q; want the sandbox's own list applied", r.Stdout, r.Stderr)
	}
	info := structuredAs[struct {
		Network struct{ Allow []string } `json:"network"`
	}](t, mustOK(t, "sandbox_info", call(t, c2, "sandbox_info", map[string]any{"sandbox_id": id})))
	if !slices.Equal(info.Network.Allow, []string{"sub.allowed.test:80"}) {
		t.Errorf("sandbox_info after the restart: %+v", info.Network)
	}
}
