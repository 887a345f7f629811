package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
)

// sdkReport is what testdata/e2b/sdk.mjs prints.
type sdkReport struct {
	SDK            string   `json:"sdk"`
	InterpreterSDK string   `json:"interpreterSdk"`
	SandboxID      string   `json:"sandboxId"`
	Steps          []string `json:"steps"`
	Failures       []string `json:"failures"`
	UploadMs       int64    `json:"uploadMs"` // the 100 MiB file, measured by the SDK
	DownloadMs     int64    `json:"downloadMs"`
}

// TestE2BSDK drives a gateway on real Docker with the unmodified E2B
// SDKs (npm e2b and @e2b/code-interpreter), at the versions pinned in
// testdata/e2b and at the newest the registry serves: commands with env
// and cwd, streaming, stdin, files up to 100 MiB, the code interpreter
// with state and a chart, timeouts, listing, reconnecting, another
// tenant's key and a forged access token (sdk.mjs has every check).
func TestE2BSDK(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs Node, npm and the Docker engine; skipped in -short mode")
	}
	node, npm := requireNode(t)
	for _, version := range []string{"pinned", "latest"} {
		t.Run(version, func(t *testing.T) {
			dir := installNodeClient(t, npm, "e2b")
			if version == "latest" {
				npmIn(t, npm, dir, "install", "--no-audit", "--no-fund", "--no-save", "e2b@latest", "@e2b/code-interpreter@latest")
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
			rep := runSDKScript(t, node, dir, []string{"E2B_API_URL=" + og.Base, "E2B_SANDBOX_URL=" + og.Base, "E2B_API_KEY=" + key, "E2B_OTHER_KEY=" + other})
			t.Logf("e2b %s, @e2b/code-interpreter %s: %d checks passed; 100 MiB upload %d ms, download %d ms", rep.SDK, rep.InterpreterSDK, len(rep.Steps), rep.UploadMs, rep.DownloadMs)
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
			for _, want := range []string{"e2b.sandbox.create", "e2b.process.Start", "e2b.files.upload", "e2b.files.download", "e2b.interpreter.execute", "e2b.sandbox.kill"} {
				if !slices.Contains(tools, want) {
					t.Errorf("no %s record under the key's identity; have %v", want, tools)
				}
			}
		})
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
