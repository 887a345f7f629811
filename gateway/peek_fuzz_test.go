package gateway

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzPeekMessage feeds arbitrary bodies to the edge's JSON-RPC peek: it
// must never panic, must hand the next handler the exact bytes it read,
// and must agree with itself on what it decoded.
func FuzzPeekMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":"ls"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"method":"tools/call","METHOD":"initialize","params":{"name":1}}`,
		`{"id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`,
		"\xff\xfe{", `{"params":` + string(bytes.Repeat([]byte("["), 10000)),
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		msg, err := peekMessage(r)
		if err != nil {
			t.Fatalf("peek of an in-memory body failed: %v", err)
		}
		rest := new(bytes.Buffer)
		rest.ReadFrom(r.Body)
		if !bytes.Equal(rest.Bytes(), body) {
			t.Fatal("the next handler does not see the body the client sent")
		}
		again, _ := peekMessage(httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body)))
		if again.Method != msg.Method || again.Params.Name != msg.Params.Name || again.metaVersion() != msg.metaVersion() {
			t.Fatal("peek is not deterministic")
		}
		_ = msg.needsSession()
	})
}
