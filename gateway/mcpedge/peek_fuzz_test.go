package mcpedge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
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
		`{"ID":"7","Method":"tools/call","PARAMS":{"Name":"x","ARGUMENTS":{"a":[1,2.5,"\u2028"]},"_META":{"k":1},"task":{"ttl":5}},"extra":true}`,
		`{"id":1,"method":"tools/call","params":{"name":"a","arguments":null}}`,
		"{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"s\":\"a\\u00e9\\n\\ud800\xff\"}}}",
		`{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"n":1e400}}}`,
		`{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"n":-0,"x":[true,false,null,{"a":"b"},[]],"d":1,"d":2.5e-3}}}`,
		`{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}},"params":{"name":"b"}}`,
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
		if msg.Args == nil && !bytes.Equal(rest.Bytes(), body) {
			t.Fatal("the next handler does not see the body the client sent")
		}
		if msg.Args != nil {
			sameCallWithoutArguments(t, body, rest.Bytes(), msg.Args)
		}
		again, _ := peekMessage(httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body)))
		if again.Method != msg.Method || again.Params.Name != msg.Params.Name || again.metaVersion() != msg.metaVersion() {
			t.Fatal("peek is not deterministic")
		}
		_ = msg.needsSession()
	})
}

// sameCallWithoutArguments checks a body the edge rewrote: mcp-go must
// read from rest exactly what it would have read from body, except the
// arguments, which are empty in rest and equal to args as decoded.
func sameCallWithoutArguments(t *testing.T, body, rest []byte, args map[string]any) {
	t.Helper()
	type call struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Method  string `json:"method"`
		Params  struct {
			Name      string         `json:"name"`
			Meta      map[string]any `json:"_meta"`
			Arguments any            `json:"arguments"`
			Task      any            `json:"task"`
		} `json:"params"`
		Extra any `json:"extra"`
	}
	var was, now call
	errWas, errNow := json.Unmarshal(body, &was), json.Unmarshal(rest, &now)
	if (errWas == nil) != (errNow == nil) {
		t.Fatalf("the original decodes with %v, the rewritten body with %v:\n%s\n%s", errWas, errNow, body, rest)
	}
	if errWas != nil {
		return
	}
	wantArgs := was.Params.Arguments
	if wantArgs == nil {
		wantArgs = map[string]any{}
	}
	if !reflect.DeepEqual(wantArgs, any(args)) {
		t.Fatalf("edge arguments %v, body's %v", args, was.Params.Arguments)
	}
	if got, ok := now.Params.Arguments.(map[string]any); !ok || len(got) != 0 {
		t.Fatalf("the rewritten body still carries arguments: %s", rest)
	}
	was.Params.Arguments, now.Params.Arguments = nil, nil
	if !reflect.DeepEqual(was, now) {
		t.Fatalf("mcp-go would read %+v from the rewrite, %+v from the original", now, was)
	}
}
