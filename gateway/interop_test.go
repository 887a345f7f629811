package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// interopObservation is what testdata/interop/client.mjs prints: what the
// official TypeScript SDK saw of the gateway.
type interopObservation struct {
	SDKVersion      string   `json:"sdkVersion"`
	ProtocolVersion string   `json:"protocolVersion"`
	SessionID       string   `json:"sessionId"`
	Tools           []string `json:"tools"`
	FileRoundTrip   struct {
		Written      string `json:"written"`
		Read         string `json:"read"`
		WriteIsError bool   `json:"writeIsError"`
		ReadIsError  bool   `json:"readIsError"`
	} `json:"fileRoundTrip"`
	Shell struct {
		IsError    bool       `json:"isError"`
		Structured execResult `json:"structured"`
		Progress   []struct {
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
			Message  string   `json:"message"`
			AtMs     int64    `json:"atMs"`
		} `json:"progress"`
		ResultAtMs int64 `json:"resultAtMs"`
	} `json:"shell"`
	Code struct {
		IsError    bool       `json:"isError"`
		Structured execResult `json:"structured"`
	} `json:"code"`
	LogMessages []struct {
		Level  string `json:"level"`
		Logger string `json:"logger"`
		Data   any    `json:"data"`
	} `json:"logMessages"`
	HTTP []struct {
		Method         string `json:"method"`
		Status         int    `json:"status"`
		ContentType    string `json:"contentType"`
		ProtocolHeader string `json:"protocolHeader"`
		WithSession    bool   `json:"withSession"`
		Error          string `json:"error"`
	} `json:"http"`
	TransportErrors []string `json:"transportErrors"`
	Terminated      bool     `json:"terminated"`
	Closed          bool     `json:"closed"`
	Failures        []string `json:"failures"`
}

// sessionEras are the served protocol versions that carry Mcp-Session-Id.
var sessionEras = []string{"2025-06-18", "2025-11-25"}

// TestInteropTypeScriptSDK drives the gateway with the official MCP
// TypeScript SDK, a client written independently of the mcp-go client the
// other tests use: tools/list, a file round trip, run_shell with progress
// (with the SDK's standalone GET stream open), run_code, and session
// termination, which must remove the container.
func TestInteropTypeScriptSDK(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs Node, npm and the Docker engine; skipped in -short mode")
	}
	node, npm := requireNode(t)
	dir := installNodeClient(t, npm, "interop")
	tg := startGateway(t, nil)

	obs := runInteropClient(t, node, dir, tg.URL)
	t.Logf("SDK %s negotiated %s, session %t; HTTP: %s", obs.SDKVersion, obs.ProtocolVersion, obs.SessionID != "", httpSummary(obs))

	for _, want := range []string{"run_shell", "run_code", "read_file", "write_file", "edit_file", "list_directory"} {
		if !slices.Contains(obs.Tools, want) {
			t.Errorf("tools/list lacks %s: %v", want, obs.Tools)
		}
	}
	if f := obs.FileRoundTrip; f.WriteIsError || f.ReadIsError || f.Read != f.Written || f.Written == "" {
		t.Errorf("file round trip: %+v", f)
	}
	checkInteropShell(t, obs)
	if c := obs.Code; c.IsError || c.Structured.ExitCode != 0 || c.Structured.Stdout != "45\n" ||
		!strings.Contains(c.Structured.Stderr, "py 3") || c.Structured.DurationMs <= 0 {
		t.Errorf("run_code python: %+v", c)
	}
	if len(obs.TransportErrors) > 0 {
		t.Errorf("transport errors: %q", obs.TransportErrors)
	}
	// The SDK opens the standalone stream when the server offers it; the
	// call's progress above must still have come on the call's own POST.
	opened := false
	for _, h := range obs.HTTP {
		opened = opened || h.Method == "GET" && h.Status == 200 && strings.HasPrefix(h.ContentType, "text/event-stream")
	}
	if !opened {
		t.Errorf("the SDK opened no standalone GET stream: %s", httpSummary(obs))
	}
	checkInteropSessionEnd(t, tg, obs)
}

// checkInteropShell asserts that run_shell's output streamed: the chunk
// with "one" arrived as its own progress notification, before "two" was
// printed a second later, and progress only grew. The client set the log
// level to info, so the chunk must also have come as a log message.
func checkInteropShell(t *testing.T, obs interopObservation) {
	t.Helper()
	s := obs.Shell
	if s.IsError || s.Structured.ExitCode != 0 || s.Structured.Stdout != "one\ntwo\n" || s.Structured.DurationMs < 1000 {
		t.Errorf("run_shell: %+v", s)
	}
	logged := false
	for _, m := range obs.LogMessages {
		logged = logged || m.Logger == "stdout" && m.Data == "one\n"
	}
	if !logged {
		t.Errorf("no notifications/message from logger stdout with \"one\\n\" at log level info: %+v", obs.LogMessages)
	}
	if len(s.Progress) == 0 {
		t.Fatal("run_shell: no progress notification reached the SDK's onprogress")
	}
	streamed := false
	for i, p := range s.Progress {
		t.Logf("progress %d at %d ms (result at %d ms): %v %q", i, p.AtMs, s.ResultAtMs, p.Progress, p.Message)
		if i > 0 && p.Progress <= s.Progress[i-1].Progress {
			t.Errorf("progress %d is %v, not above the previous %v", i, p.Progress, s.Progress[i-1].Progress)
		}
		if strings.Contains(p.Message, "one") && !strings.Contains(p.Message, "two") && p.AtMs <= s.ResultAtMs {
			streamed = true
		}
	}
	if !streamed {
		t.Errorf("no progress message carried \"one\" on its own before the result")
	}
}

// checkInteropSessionEnd asserts that the client ended its session with a
// DELETE the gateway accepted, and that this removed the container.
func checkInteropSessionEnd(t *testing.T, tg *testGateway, obs interopObservation) {
	t.Helper()
	if !slices.Contains(sessionEras, obs.ProtocolVersion) {
		t.Fatalf("negotiated %q: client.mjs handles only the session eras %v; add a sandbox_create/sandbox_destroy path", obs.ProtocolVersion, sessionEras)
	}
	if obs.SessionID == "" || !obs.Terminated || !obs.Closed {
		t.Fatalf("session %q terminated %t closed %t", obs.SessionID, obs.Terminated, obs.Closed)
	}
	deleted := false
	for _, h := range obs.HTTP {
		if h.Method == "DELETE" {
			deleted = h.Status == 200 && h.WithSession
		}
	}
	if !deleted {
		t.Errorf("no DELETE with the session id answered 200: %s", httpSummary(obs))
	}
	deadline := time.Now().Add(10 * time.Second)
	for n := len(tg.containers(t)); n != 0; n = len(tg.containers(t)) {
		if time.Now().After(deadline) {
			t.Fatalf("%d containers 10s after the client closed, want 0", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, ev := range auditRecords(t, tg.AuditPath) {
		if ev.Kind == audit.KindSessionEnd && ev.Session == obs.SessionID {
			if r := ev.Summary["reason"]; r != "client DELETE" {
				t.Errorf("session ended with reason %q, want client DELETE", r)
			}
			return
		}
	}
	t.Errorf("no session.end audit record for the client's session")
}

// requireNode returns the paths of node and npm; without them it skips, or
// fails where Docker tests must not skip.
func requireNode(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if err := errors.Join(errNode, errNpm); err != nil {
		if sandboxtest.Required() {
			t.Fatalf("interop test needs node and npm: %v [CI or REQUIRE_DOCKER=1 is set, so this fails instead of skipping]", err)
		}
		t.Skipf("interop test needs node and npm: %v", err)
	}
	return node, npm
}

// installNodeClient copies testdata/NAME's files (not a stray
// node_modules) to a temp dir and installs the locked dependencies there.
func installNodeClient(t *testing.T, npm, name string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", name, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, e.Name()), string(b))
	}
	npmIn(t, npm, dir, "ci", "--no-audit", "--no-fund", "--prefer-offline")
	return dir
}

// npmIn runs npm with args in dir.
func npmIn(t *testing.T, npm, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// runInteropClient runs client.mjs against url and decodes its report; a
// non-zero exit fails the test with the client's own failure list.
func runInteropClient(t *testing.T, node, dir, url string) interopObservation {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, "client.mjs", url)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	var obs interopObservation
	if err := json.Unmarshal(stdout.Bytes(), &obs); err != nil {
		t.Fatalf("client.mjs: %v; decode its report: %v\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.Bytes(), stderr.Bytes())
	}
	if runErr != nil || len(obs.Failures) > 0 {
		t.Fatalf("client.mjs: %v; failures: %q\nreport:\n%s\nstderr:\n%s", runErr, obs.Failures, stdout.Bytes(), stderr.Bytes())
	}
	return obs
}

// httpSummary renders the client's HTTP exchanges as "POST 200 ...".
func httpSummary(obs interopObservation) string {
	parts := make([]string, 0, len(obs.HTTP))
	for _, h := range obs.HTTP {
		ct, _, _ := strings.Cut(h.ContentType, ";")
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s %d %s %s", h.Method, h.Status, ct, h.Error)))
	}
	return strings.Join(parts, ", ")
}
