package gateway_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official MCP Go SDK (github.com/modelcontextprotocol/go-sdk) is a
// client independent of the mcp-go the gateway is built on, and one that
// negotiates 2026-07-28 (server/discover, no session). These tests drive
// the gateway with it as a sessionless client would.

// sdkSession connects the Go SDK to url as the client name.
func sdkSession(t *testing.T, url, name string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect the Go SDK: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sdkCall calls tool and fails t on a protocol error or an error result.
func sdkCall(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s: error result: %s", tool, b.String())
	}
	var structured map[string]any
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &structured); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", tool, data, err)
		}
	}
	return b.String(), structured
}

// noteIn returns the sandbox id re names in s, failing when absent.
func noteIn(t *testing.T, s string, re *regexp.Regexp) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("result does not match %q:\n%s", re, s)
	}
	return m[1]
}

// TestInteropGoSDK: the Go SDK negotiates 2026-07-28 with the gateway,
// lists its tools, runs a command, writes and reads a file in its
// default sandbox without a sandbox_id (the results name it), uses a
// sandbox it created by its id, lists and reads a resource of it, and
// gets a prompt.
func TestInteropGoSDK(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	cs := sdkSession(t, tg.URL, "go-sdk-interop")
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("negotiated protocol version %q, want 2026-07-28", got)
	}

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"run_shell", "write_file", "read_file", "sandbox_create"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	out, st := sdkCall(t, cs, "run_shell", map[string]any{"command": "echo hello from the go sdk"})
	def := noteIn(t, out, createdDefault)
	if st["exit_code"] != 0.0 || !strings.Contains(st["stdout"].(string), "hello from the go sdk") {
		t.Errorf("run_shell structured result %v", st)
	}
	out, _ = sdkCall(t, cs, "write_file", map[string]any{"path": "note.txt", "content": "written by the go sdk"})
	if got := noteIn(t, out, usingDefault); got != def {
		t.Errorf("write_file used default %s, want %s", got, def)
	}
	out, _ = sdkCall(t, cs, "read_file", map[string]any{"path": "note.txt"})
	if noteIn(t, out, usingDefault) != def || !strings.Contains(out, "written by the go sdk") {
		t.Errorf("read_file: %s", out)
	}

	_, st = sdkCall(t, cs, "sandbox_create", nil)
	id, _ := st["sandbox_id"].(string)
	if id == "" || id == def {
		t.Fatalf("sandbox_create gave sandbox_id %q (the default is %s)", id, def)
	}
	out, _ = sdkCall(t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "created.txt", "content": "in the created sandbox"})
	if strings.Contains(out, "default sandbox") {
		t.Errorf("write_file with sandbox_id used a default: %s", out)
	}
	sdkResources(t, cs, id)

	prompt, err := cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "debug-command", Arguments: map[string]string{"command": "false", "sandbox_id": id}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if len(prompt.Messages) == 0 {
		t.Fatal("prompts/get debug-command: no messages")
	}
	if tc, ok := prompt.Messages[0].Content.(*sdk.TextContent); !ok || !strings.Contains(tc.Text, id) {
		t.Errorf("prompt's first message %#v does not name sandbox %s", prompt.Messages[0].Content, id)
	}
}

// sdkResources lists the caller's resources through the SDK, finds the
// file written to sandbox id among them, and reads it.
func sdkResources(t *testing.T, cs *sdk.ClientSession, id string) {
	t.Helper()
	uri := "sandbox://" + id + "/created.txt"
	var listed []string
	for r, err := range cs.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		listed = append(listed, r.URI)
	}
	if !slices.Contains(listed, uri) {
		t.Fatalf("resources/list lacks %s: %v", uri, listed)
	}
	res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != "in the created sandbox" {
		t.Fatalf("resources/read %s: %+v", uri, res.Contents)
	}
}
