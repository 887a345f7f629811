package docs_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/sandgate/sandgate/docs"
)

var update = flag.Bool("update", false, "rewrite tools.md from the golden tool list")

const (
	goldenTools = "../gateway/testdata/tools_list.golden.json"
	toolsPage   = "tools.md"
)

// TestToolsReference fails when tools.md is not what RenderTools makes of
// the golden tool list, so the reference cannot drift from the tools the
// gateway serves. The golden file itself is pinned by TestToolsListGolden
// in package gateway.
func TestToolsReference(t *testing.T) {
	t.Parallel()
	list, err := os.ReadFile(goldenTools)
	if err != nil {
		t.Fatal(err)
	}
	want, err := docs.RenderTools(list)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(toolsPage, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(toolsPage)
	if err != nil {
		t.Fatalf("%v (regenerate with: make docs)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/tools.md differs from what %s renders to; regenerate it with `make docs` "+
			"(go test ./docs -run TestToolsReference -update) and commit the result", goldenTools)
	}
}

// TestRenderToolsNested checks the renderer on the shapes the tool list
// uses: properties kept in order, required marks, nested objects and
// arrays of objects, maps, and pipes escaped inside table cells.
func TestRenderToolsNested(t *testing.T) {
	t.Parallel()
	in := `[{"name":"t","description":"Do it. Requires scope: sandbox:exec.",
	 "annotations":{"readOnlyHint":true,"openWorldHint":false},
	 "inputSchema":{"type":"object","required":["z"],"properties":{
	  "z":{"type":"string","description":"a|b"},
	  "a":{"type":"object","properties":{"allow":{"type":"array","items":{"type":"string"}}}},
	  "f":{"type":"array","items":{"type":"object","required":["v"],"properties":{"v":{"type":"string"}}}},
	  "env":{"type":"object","additionalProperties":{"type":"string"}},
	  "mode":{"type":"string","enum":["x","y"],"default":"x"}}}}]`
	out, err := docs.RenderTools([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `sandbox:exec` | [`t`](#t) |",
		"| `z` | string | yes | a\\|b |",
		"| `a.allow` | array of string |  |  |",
		"| `f[].v` | string | yes |  |",
		"| `env` | object of string |  |  |",
		"| `mode` | string |  | One of `x`, `y`. Default `x`. |",
		"Annotations: `readOnlyHint: true`, `openWorldHint: false`.",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("rendered page lacks %q:\n%s", want, out)
		}
	}
	if bytes.Index(out, []byte("`z`")) > bytes.Index(out, []byte("`a`")) {
		t.Errorf("properties out of document order:\n%s", out)
	}
}
