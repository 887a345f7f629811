package gateway_test

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
)

// noteArgs are the arguments each tool that takes a sandbox_id is called
// with in TestLocalDefaultNoteApart, and what to do in the sandbox before
// each of its two calls so that both find it in the same state. A tool
// missing here fails the test.
var noteArgs = map[string]struct {
	args  map[string]any
	setup string // a shell command run first, in the sandbox, by its id
	pause bool   // pause the sandbox first (after setup)
}{
	"read_file":           {args: map[string]any{"path": "note.txt"}},
	"write_file":          {args: map[string]any{"path": "w.txt", "content": "x"}, setup: "rm -f w.txt"},
	"edit_file":           {args: map[string]any{"path": "e.txt", "old_string": "one", "new_string": "1"}, setup: "printf 'line one\\n' > e.txt"},
	"file_info":           {args: map[string]any{"path": "note.txt"}},
	"list_directory":      {args: map[string]any{}},
	"make_directory":      {args: map[string]any{"path": "d/e"}, setup: "rm -rf d"},
	"move_path":           {args: map[string]any{"from": "m1", "to": "m2"}, setup: "rm -f m2; echo m > m1"},
	"remove_path":         {args: map[string]any{"path": "r.txt"}, setup: "echo r > r.txt"},
	"search_files":        {args: map[string]any{"pattern": "line"}},
	"search_code":         {args: map[string]any{"query": "line"}},
	"run_shell":           {args: map[string]any{"command": "echo hi; echo err >&2"}},
	"run_code":            {args: map[string]any{"language": "python", "code": "print(6*7)"}},
	"interpreter_restart": {args: map[string]any{"language": "python"}},
	"run_notebook":        {args: map[string]any{"path": "missing.ipynb"}},
	"http_request":        {args: map[string]any{"url": "http://example.com/"}},
	"sandbox_info":        {args: map[string]any{}},
	"sandbox_network":     {args: map[string]any{}},
	"sandbox_pause":       {args: map[string]any{}},
	"sandbox_resume":      {args: map[string]any{}, pause: true},
	"sandbox_snapshot":    {args: map[string]any{"name": "note"}},
	"sandbox_fork":        {args: map[string]any{"count": 1}},
	"process_list":        {args: map[string]any{}},
	"process_output":      {args: map[string]any{"process_id": "no-such-process"}},
	"process_input":       {args: map[string]any{"process_id": "no-such-process", "data": "x"}},
	"process_kill":        {args: map[string]any{"process_id": "no-such-process"}},
	"note_custom":         {args: map[string]any{}},

	"browser_click":            {args: map[string]any{"selector": "#x"}},
	"browser_console_messages": {args: map[string]any{}},
	"browser_evaluate":         {args: map[string]any{"expression": "1+1"}},
	"browser_fill_form":        {args: map[string]any{"fields": []any{}}},
	"browser_hover":            {args: map[string]any{"selector": "#x"}},
	"browser_navigate":         {args: map[string]any{"url": "http://127.0.0.1:9/"}},
	"browser_navigate_back":    {args: map[string]any{}},
	"browser_pdf":              {args: map[string]any{"path": "p.pdf"}},
	"browser_press_key":        {args: map[string]any{"key": "Enter"}},
	"browser_record_start":     {args: map[string]any{}},
	"browser_record_stop":      {args: map[string]any{}},
	"browser_resize":           {args: map[string]any{"device": "mobile"}},
	"browser_route":            {args: map[string]any{}},
	"browser_screenshot":       {args: map[string]any{}},
	"browser_select_option":    {args: map[string]any{"selector": "#x", "values": []any{"a"}}},
	"browser_snapshot":         {args: map[string]any{}},
	"browser_tabs":             {args: map[string]any{"action": "list"}},
	"browser_type":             {args: map[string]any{"selector": "#x", "text": "a"}},
	"browser_wait_for":         {args: map[string]any{"text": "x"}},
}

// TestLocalDefaultNoteApart: in the sessionless era, every tool that can
// run without sandbox_id answers in content[0] and structuredContent
// exactly what the same call with its default sandbox's id answers (up to
// times and sizes); the default-sandbox note is a text block after the
// payload and a _meta member, never part of the payload, and an error's
// content[0] is the error.
func TestLocalDefaultNoteApart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putManifest(t, dir, "note.json", map[string]any{"name": "note_custom", "description": "Print a line.",
		"inputSchema": objectSchema(nil), "command": []string{"echo", "custom"}, "scope": "sandbox:exec"})
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := namedModernClient(t, tg.URL, "note-client")

	first := mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "printf 'line one\\nline two\\n' > note.txt"}))
	if strings.Contains(text(first), "default sandbox") {
		t.Errorf("the first call's content[0] holds the note: %q", text(first))
	}
	id := defaultMeta(t, first, true)

	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if _, ok := tool.InputSchema.Properties["sandbox_id"]; !ok || tool.Name == "sandbox_destroy" {
			continue
		}
		tc, ok := noteArgs[tool.Name]
		if !ok {
			t.Errorf("tool %s takes a sandbox_id but has no arguments in noteArgs", tool.Name)
			continue
		}
		t.Run(tool.Name, func(t *testing.T) {
			prepare := func() {
				if tc.setup != "" {
					mustOK(t, "setup", call(t, c, "run_shell", map[string]any{"command": tc.setup, "sandbox_id": id}))
				}
				if tc.pause {
					mustOK(t, "sandbox_pause", call(t, c, "sandbox_pause", map[string]any{"sandbox_id": id}))
				}
			}
			prepare()
			implicit := call(t, c, tool.Name, maps.Clone(tc.args))
			prepare()
			explicit := call(t, c, tool.Name, withSandbox(tc.args, id))
			samePayload(t, implicit, explicit, id, id)
		})
	}

	// sandbox_destroy removes the default; the next call makes another,
	// which the explicit call then destroys.
	implicit := call(t, c, "sandbox_destroy", nil)
	if defaultMeta(t, implicit, false) != id {
		t.Fatalf("sandbox_destroy without sandbox_id destroyed another sandbox: %s", allText(implicit))
	}
	next := defaultMeta(t, mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"})), true)
	explicit := call(t, c, "sandbox_destroy", map[string]any{"sandbox_id": next})
	samePayload(t, implicit, explicit, id, next)
}

// samePayload checks that implicit, a call without sandbox_id in default
// sandbox implicitID, has the payload of explicit, the same call with
// sandbox_id explicitID, followed by one note that names the default,
// and the default in _meta.
func samePayload(t *testing.T, implicit, explicit *mcp.CallToolResult, implicitID, explicitID string) {
	t.Helper()
	if got := defaultMeta(t, implicit, false); got != implicitID {
		t.Errorf("_meta names default %s, want %s", got, implicitID)
	}
	if explicit.Meta != nil && explicit.Meta.GetMetaField("sandgate.dev/default-sandbox") != nil {
		t.Errorf("a call with sandbox_id has a default-sandbox _meta member: %v", explicit.Meta.AdditionalFields)
	}
	if len(implicit.Content) != len(explicit.Content)+1 {
		t.Fatalf("%d content blocks without sandbox_id, %d with; want one more (the note): %q", len(implicit.Content), len(explicit.Content), allText(implicit))
	}
	// Notes follow the payload in the order they arose (the default's
	// first, then one that the call resumed the sandbox, say).
	if !slices.ContainsFunc(implicit.Content[1:], func(c mcp.Content) bool {
		note, ok := c.(mcp.TextContent)
		return ok && strings.Contains(note.Text, "default sandbox "+implicitID)
	}) {
		t.Errorf("no block after the payload is the default sandbox's note: %q", allText(implicit))
	}
	if implicit.IsError != explicit.IsError {
		t.Errorf("isError %v without sandbox_id, %v with", implicit.IsError, explicit.IsError)
	}
	a, b := normalise(text(implicit), implicitID), normalise(text(explicit), explicitID)
	if a != b || strings.Contains(a, "default sandbox") {
		t.Errorf("content[0] without sandbox_id:\n%s\nwith:\n%s", a, b)
	}
	sa, _ := json.Marshal(implicit.StructuredContent)
	sb, _ := json.Marshal(explicit.StructuredContent)
	if a, b := normalise(string(sa), implicitID), normalise(string(sb), explicitID); a != b {
		t.Errorf("structuredContent without sandbox_id:\n%s\nwith:\n%s", a, b)
	}
}

// defaultMeta returns the sandbox id in res's default-sandbox _meta
// member, checking its created flag.
func defaultMeta(t *testing.T, res *mcp.CallToolResult, created bool) string {
	t.Helper()
	var m map[string]any
	if res.Meta != nil {
		m, _ = res.Meta.GetMetaField("sandgate.dev/default-sandbox").(map[string]any)
	}
	id, _ := m["sandbox_id"].(string)
	if id == "" || (m["created"] == true) != created {
		t.Fatalf("_meta default-sandbox member %v, want a sandbox_id and created %v; content %q", m, created, allText(res))
	}
	return id
}

// withSandbox is args with sandbox_id set.
func withSandbox(args map[string]any, id string) map[string]any {
	out := maps.Clone(args)
	out["sandbox_id"] = id
	return out
}

var digits = regexp.MustCompile(`[0-9]+`)

// normalise makes two answers of one call comparable: the sandbox id it
// ran in, and every number (times, sizes, use), read as placeholders.
func normalise(s, id string) string {
	// Other ids the call made (a snapshot's, a fork's) differ between
	// the two calls too.
	return digits.ReplaceAllString(otherIDs.ReplaceAllString(strings.ReplaceAll(s, id, "SANDBOX"), "ID"), "0")
}

// otherIDs matches the 128-bit hex ids the gateway makes.
var otherIDs = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
