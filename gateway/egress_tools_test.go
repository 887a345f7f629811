package gateway_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
)

// TestEgressRealTools runs the tools agents use in a real sandbox, with
// the proxy environment every process gets and a private CA named the
// usual ways: pip from a simple index, npm from a registry, git over
// HTTPS (git http-backend) and git over ssh through `runner connect`.
func TestEgressRealTools(t *testing.T) {
	world := newEgressWorld(t)
	tg := startGateway(t, func(c *gateway.Config) { world.configure(t, c, egressCeiling...) })
	c := legacyClient(t, tg.URL)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "/workspace/ca.pem", "content": world.CAPEM}))
	ca := map[string]any{"env": map[string]any{"SSL_CERT_FILE": "/workspace/ca.pem", "REQUESTS_CA_BUNDLE": "/workspace/ca.pem",
		"PIP_CERT": "/workspace/ca.pem", "GIT_SSL_CAINFO": "/workspace/ca.pem", "NODE_EXTRA_CA_CERTS": "/workspace/ca.pem"}}

	tools := []struct{ name, command, want, asked string }{
		{"pip install from a simple index",
			"pip install -q --no-cache-dir --disable-pip-version-check --index-url https://pypi.allowed.test/simple/ --target /workspace/site sandgate-hello && " +
				"PYTHONPATH=/workspace/site python3 -c 'import sandgate_hello; print(sandgate_hello.hello())'",
			"hello from a wheel fetched through the egress proxy", "pypi.allowed.test:443"},
		{"git clone over https", "git clone -q https://git.allowed.test/git/repo.git /workspace/over-https && cat /workspace/over-https/README",
			"cloned through the egress proxy", "git.allowed.test:443"},
		{"git clone over ssh through runner connect",
			`GIT_SSH_COMMAND="$GIT_SSH_COMMAND -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR" ` +
				"git clone -q ssh://git@git.allowed.test/repo.git /workspace/over-ssh && cat /workspace/over-ssh/README",
			"cloned through the egress proxy", "git.allowed.test:22"},
		{"npm install from a registry",
			"mkdir -p /workspace/proj && cd /workspace/proj && npm install --registry https://npm.allowed.test/ --no-audit --no-fund --loglevel=error sandgate-hello && " +
				"node -e 'console.log(require(\"sandgate-hello\").hello())'",
			"hello from an npm package fetched through the egress proxy", "npm.allowed.test:443"},
	}
	for _, tc := range tools {
		t.Run(tc.name, func(t *testing.T) {
			since := len(auditRecords(t, tg.AuditPath))
			r, _ := shell(t, c, tc.command, ca)
			if r.ExitCode != 0 || !strings.Contains(r.Stdout, tc.want) {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant %q", r.ExitCode, r.Stdout, r.Stderr, tc.want)
			}
			if ev := waitEgress(t, tg, since, tc.asked); ev.Outcome != audit.OutcomeOK || ev.Connection.BytesDown == 0 {
				t.Errorf("audit %+v %+v", ev, ev.Connection)
			}
		})
	}
}
