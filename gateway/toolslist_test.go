package gateway_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestToolsListGolden pins the tools/list answer (names, descriptions,
// schemas, annotations): the interface contract external tests drive.
// Run with -update after an intended change and review the diff.
func TestToolsListGolden(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const golden = "testdata/tools_list.golden.json"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestToolsListGolden -update ./gateway/)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tools/list differs from %s; if intended, rerun with -update and review the diff.\ngot:\n%s", golden, got)
	}
}
