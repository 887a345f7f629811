package mcpedge

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzJSONStringBody: the splicer escapes a text exactly as encoding/json
// does, so a client sees the same bytes whichever wrote them.
func FuzzJSONStringBody(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" back \\ nl \n tab \t", "\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>",
		"\u2028\u2029", "héllo wörld ✓ 🎉", "\xff\xfe bad \xc3", strings.Repeat("x", 70000) + "\"" + strings.Repeat("é", 20000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		got.WriteByte('"')
		if err := writeJSONStringBody(&got, s); err != nil {
			t.Fatal(err)
		}
		got.WriteByte('"')
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("escape(%q)\n got %q\nwant %q", s, got.Bytes(), want)
		}
	})
}

// TestBulkTextSplice: a large text swapped for its placeholder comes back
// whole, wherever the placeholder lands in the encoded response, and a
// placeholder with another request's nonce is left alone.
func TestBulkTextSplice(t *testing.T) {
	b := &bulkTexts{}
	ctx := withBulkTexts(context.Background(), b)
	big := strings.Repeat("line \"q\" <&> é\n", 8000)
	res := mcp.NewToolResultText(big)
	res.Content = append(res.Content, mcp.NewTextContent("small"))
	HoldLargeTexts(ctx, res)
	if held := res.Content[0].(mcp.TextContent).Text; len(held) > 100 || !b.pending() {
		t.Fatalf("the large text was not held: %d bytes left in the result", len(held))
	}
	if res.Content[1].(mcp.TextContent).Text != "small" {
		t.Fatal("a small text was held")
	}
	// The placeholder may land inside a longer string.
	first := res.Content[0].(mcp.TextContent)
	first.Text = "note: " + first.Text
	res.Content[0] = first
	other := &bulkTexts{}
	forged := other.hold("never")
	res.Content = append(res.Content, mcp.NewTextContent(forged))
	encoded, err := json.Marshal(mcp.JSONRPCResponse{JSONRPC: "2.0", ID: mcp.NewRequestId(1), Result: res})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if n, err := b.writeSpliced(&out, encoded); err != nil || n != len(encoded) {
		t.Fatalf("writeSpliced = %d, %v; want %d", n, err, len(encoded))
	}
	var back struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("spliced response is not JSON: %v", err)
	}
	c := back.Result.Content
	if len(c) != 3 || c[0].Text != "note: "+big || c[1].Text != "small" || c[2].Text != forged {
		t.Fatalf("spliced texts differ: %d contents, first %d bytes", len(c), len(c[0].Text))
	}
	if b.pending() {
		t.Fatal("the text is still held after it was written")
	}
}
