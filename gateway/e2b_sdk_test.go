package gateway_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// sdkReport is what testdata/e2b/sdk.mjs prints.
type sdkReport struct {
	SDK            string   `json:"sdk"`
	InterpreterSDK string   `json:"interpreterSdk"`
	NestedSDK      string   `json:"nestedSdk"` // an e2b the interpreter SDK has its own copy of
	SandboxID      string   `json:"sandboxId"`
	Steps          []string `json:"steps"`
	Failures       []string `json:"failures"`
	UploadMs       int64    `json:"uploadMs"` // the 100 MiB file, measured by the SDK
	DownloadMs     int64    `json:"downloadMs"`
}

// sdkVersion is a release of e2b and @e2b/code-interpreter that
// TestE2BSDK drives; "" means the newest the registry serves, and an
// interpreter of "-" none (e2b alone).
type sdkVersion struct{ name, e2b, interpreter string }

// sdkVersions are the releases TestE2BSDK drives besides those pinned in
// testdata/e2b. The oldest 2.x on the registry (e2b 2.0.1 and
// @e2b/code-interpreter 2.0.0, August 2025) reach a sandbox only at
// https://{port}-{id}.{E2B_DOMAIN} (or localhost with E2B_DEBUG), never
// at a self-hosted URL: E2B_SANDBOX_URL came with e2b 2.7.0 and
// @e2b/code-interpreter 2.7.0, and e2b sends the E2b-Sandbox-Id header
// with file reads and writes only since 2.14.1 (before, they reach no
// sandbox). Those are the oldest that can run against Sandgate.
var sdkVersions = []sdkVersion{
	{name: "latest"},
	// 2.24 to 2.41 send autoResume {"enabled": false} on every create;
	// 2.39 is the newest of them the registry serves, with the newest
	// interpreter SDK that takes it.
	{name: "2.39", e2b: "2.39.0", interpreter: "2.7.2"},
	// The oldest interpreter SDK that takes E2B_SANDBOX_URL, with the
	// oldest e2b it accepts.
	{name: "oldest interpreter", e2b: "2.28.0", interpreter: "2.7.0"},
	// The oldest e2b whose every call names its sandbox, alone.
	{name: "oldest", e2b: "2.14.1", interpreter: "-"},
}

// TestE2BSDK drives a gateway on real Docker with the unmodified E2B
// SDKs (npm e2b and @e2b/code-interpreter), at the versions pinned in
// testdata/e2b, at the newest the registry serves and at older ones
// (sdkVersions): commands with env and cwd, streaming, stdin, files up
// to 100 MiB, the code interpreter with state, a chart and output
// streamed while a cell runs, timeouts, listing, reconnecting, another
// tenant's key and a forged access token (sdk.mjs has every check).
func TestE2BSDK(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs Node, npm and the Docker engine; skipped in -short mode")
	}
	node, npm := requireNode(t)
	for _, v := range append([]sdkVersion{{name: "pinned"}}, sdkVersions...) {
		t.Run(v.name, func(t *testing.T) {
			dir := installNodeClient(t, npm, "e2b")
			var env []string
			switch {
			case v.name == "pinned":
			case v.interpreter == "-":
				npmIn(t, npm, dir, "install", "--no-audit", "--no-fund", "--no-save", "--prefer-offline", "e2b@"+v.e2b)
				env = append(env, "SDK_CORE_ONLY=1")
			default:
				e2b, interp := cmp.Or(v.e2b, "latest"), cmp.Or(v.interpreter, "latest")
				npmIn(t, npm, dir, "install", "--no-audit", "--no-fund", "--no-save", "--prefer-offline", "e2b@"+e2b, "@e2b/code-interpreter@"+interp)
			}
			og, keys := e2bKeyGatewayOn(t, startGatewayWith)
			key, rec, err := keys.Add("sdk", "tenant-sdk", []string{auth.ScopeExec, auth.ScopeFilesRead, auth.ScopeFilesWrite})
			if err != nil {
				t.Fatal(err)
			}
			other, _, err := keys.Add("other", "tenant-other", []string{auth.ScopeExec})
			if err != nil {
				t.Fatal(err)
			}
			rep := runSDKScript(t, node, dir, append(env, "E2B_API_URL="+og.Base, "E2B_SANDBOX_URL="+og.Base, "E2B_API_KEY="+key, "E2B_OTHER_KEY="+other))
			t.Logf("e2b %s, @e2b/code-interpreter %s: %d checks passed; 100 MiB upload %d ms, download %d ms", rep.SDK, rep.InterpreterSDK, len(rep.Steps), rep.UploadMs, rep.DownloadMs)
			if v.e2b != "" && (rep.SDK != v.e2b || (v.interpreter != "-" && (rep.InterpreterSDK != v.interpreter || rep.NestedSDK != ""))) {
				t.Errorf("ran e2b %s (nested under the interpreter SDK: %q), @e2b/code-interpreter %s; want %s and %s", rep.SDK, rep.NestedSDK, rep.InterpreterSDK, v.e2b, v.interpreter)
			}
			// Downloads from the workspace on this host's disk are copies
			// from the open file, not reads through the runner.
			if got := scrape(t, og.testGateway)[`sandgate_file_reads_total{via="host"}`]; got == 0 {
				t.Error("no SDK download was served from the host's disk")
			}
			var tools []string
			for _, ev := range auditRecords(t, og.AuditPath) {
				if ev.Kind == audit.KindToolEnd && ev.Principal.Subject == rec.ID && !slices.Contains(tools, ev.Tool) {
					tools = append(tools, ev.Tool)
				}
			}
			for _, want := range []string{"e2b.sandbox.create", "e2b.process.Start", "e2b.files.upload", "e2b.files.download", "e2b.interpreter.execute", "e2b.sandbox.kill",
				"e2b.sandbox.pause", "e2b.sandbox.connect", "e2b.sandbox.snapshot", "e2b.snapshot.delete"} {
				if want == "e2b.interpreter.execute" && v.interpreter == "-" {
					continue
				}
				if !slices.Contains(tools, want) {
					t.Errorf("no %s record under the key's identity; have %v", want, tools)
				}
			}
		})
	}
}

// TestE2BSDKMemoryGVisor drives the pinned E2B SDKs against a gateway
// whose sandboxes run under gVisor: pause() keeps a background command
// and the code interpreter's variable, and so does a snapshot
// (createSnapshot, then Sandbox.create from it); connect with onResume
// 'reboot' drops them (sdk.mjs, part memory).
func TestE2BSDKMemoryGVisor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs Node, npm and the Docker engine; skipped in -short mode")
	}
	node, npm := requireNode(t)
	dir := installNodeClient(t, npm, "e2b")
	og, keys := e2bKeyGatewayOn(t, func(t testing.TB, ln net.Listener, mutate func(*gateway.Config)) *testGateway {
		sandboxtest.RequireRuntime(t, "runsc")
		return startDockerGateway(t, &testGateway{ln: ln, Runtime: "runsc"}, mutate)
	})
	key, _, err := keys.Add("sdk", "tenant-sdk", []string{auth.ScopeExec, auth.ScopeFilesRead, auth.ScopeFilesWrite})
	if err != nil {
		t.Fatal(err)
	}
	rep := runSDKScript(t, node, dir, []string{"SDK_PARTS=memory", "E2B_API_URL=" + og.Base, "E2B_SANDBOX_URL=" + og.Base, "E2B_API_KEY=" + key})
	t.Logf("e2b %s under gVisor: %d checks passed: %v", rep.SDK, len(rep.Steps), rep.Steps)
	if len(rep.Steps) < 4 {
		t.Errorf("only %d checks ran: %v", len(rep.Steps), rep.Steps)
	}
}

// runSDKScript runs sdk.mjs with env added and decodes its report; a
// failed check fails the test with the script's own words.
func runSDKScript(t *testing.T, node, dir string, env []string) sdkReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, "sdk.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	var rep sdkReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("sdk.mjs: %v; decode its report: %v\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	if runErr != nil || len(rep.Failures) > 0 {
		t.Fatalf("sdk.mjs: %v; failures:\n  %s\nstderr:\n%s", runErr, strings.Join(rep.Failures, "\n  "), stderr.Bytes())
	}
	return rep
}
