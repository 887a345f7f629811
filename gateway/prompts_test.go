package gateway_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestLocalPrompts: the prompts are listed with their arguments; run-tests
// embeds the repository's README from the caller's sandbox; required
// arguments are required.
func TestLocalPrompts(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := newSandboxID(t, c)
	write(t, c, id, "repo/README.md", "Run make check.\n", "")
	list, err := c.ListPrompts(t.Context(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
		for _, a := range p.Arguments {
			if a.Description == "" {
				t.Errorf("prompt %s argument %s has no description", p.Name, a.Name)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"capture-page", "debug-command", "run-tests"}) {
		t.Fatalf("prompts: %v", names)
	}

	get := func(name string, args map[string]string) (*mcp.GetPromptResult, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		return c.GetPrompt(t.Context(), req)
	}
	res, err := get("run-tests", map[string]string{"repo": "repo", "sandbox_id": id, "test_command": "make check"})
	if err != nil {
		t.Fatal(err)
	}
	var embedded *mcp.EmbeddedResource
	for _, m := range res.Messages {
		if e, ok := m.Content.(mcp.EmbeddedResource); ok {
			embedded = &e
		}
	}
	if embedded == nil {
		t.Fatalf("run-tests embeds no README: %+v", res.Messages)
	}
	if tr, ok := embedded.Resource.(mcp.TextResourceContents); !ok || tr.URI != "sandbox://"+id+"/repo/README.md" || !strings.Contains(tr.Text, "make check") {
		t.Errorf("embedded README: %+v", embedded.Resource)
	}
	if first, ok := res.Messages[0].Content.(mcp.TextContent); !ok || !strings.Contains(first.Text, "`make check`") || !strings.Contains(first.Text, id) {
		t.Errorf("run-tests text: %+v", res.Messages[0].Content)
	}
	for _, name := range []string{"debug-command", "capture-page"} {
		if _, err := get(name, nil); err == nil {
			t.Errorf("%s without its required argument succeeded", name)
		}
	}
	res, err = get("capture-page", map[string]string{"url": "http://localhost:8000", "device": "mobile"})
	if err != nil || !strings.Contains(res.Messages[0].Content.(mcp.TextContent).Text, "browser_screenshot") {
		t.Fatalf("capture-page: %+v %v", res, err)
	}
}

// TestLocalCompletion: the template's sandbox_id completes from the
// caller's sandboxes and its path from the sandbox's tree; prompt
// arguments complete too.
func TestLocalCompletion(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := newSandboxID(t, c)
	write(t, c, id, "src/main.go", "package main", "")
	write(t, c, id, "src/util.go", "package main", "")
	write(t, c, id, "setup.py", "", "")
	complete := func(ref any, arg, value string, ctxArgs map[string]string) []string {
		t.Helper()
		req := mcp.CompleteRequest{}
		req.Params.Ref = ref
		req.Params.Argument.Name, req.Params.Argument.Value = arg, value
		req.Params.Context.Arguments = ctxArgs
		res, err := c.Complete(t.Context(), req)
		if err != nil {
			t.Fatalf("complete %s=%q: %v", arg, value, err)
		}
		return res.Completion.Values
	}
	tmpl := mcp.ResourceReference{Type: "ref/resource", URI: "sandbox://{sandbox_id}/{+path}"}
	tests := []struct {
		name string
		ref  any
		arg  string
		val  string
		ctx  map[string]string
		want []string
	}{
		{"sandbox id", tmpl, "sandbox_id", id[:4], nil, []string{id}},
		{"top level", tmpl, "path", "s", map[string]string{"sandbox_id": id}, []string{"setup.py", "src/"}},
		{"in a directory", tmpl, "path", "src/m", map[string]string{"sandbox_id": id}, []string{"src/main.go"}},
		{"nowhere", tmpl, "path", "nope/x", map[string]string{"sandbox_id": id}, []string{}},
		{"the only sandbox by default", tmpl, "path", "src/u", nil, []string{"src/util.go"}},
		{"prompt repo", mcp.PromptReference{Type: "ref/prompt", Name: "run-tests"}, "repo", "sr", nil, []string{"src/"}},
		{"prompt device", mcp.PromptReference{Type: "ref/prompt", Name: "capture-page"}, "device", "m", nil, []string{"mobile"}},
	}
	for _, tc := range tests {
		if got := complete(tc.ref, tc.arg, tc.val, tc.ctx); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q completes to %q, want %q", tc.name, tc.val, got, tc.want)
		}
	}
}
