package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestBulkTextSurvivesBothResponseKinds: a large text result is written
// by the gateway in place of its placeholder (bulktext.go) in a plain
// JSON response and in an SSE response (which mcp-go chooses once a call
// has sent notifications), and the client gets the whole text in both.
func TestBulkTextSurvivesBothResponseKinds(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	big := strings.Repeat("row \"quoted\" <tag> & ünïcödé\t\\\n", 6000) // about 200 KB
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "big.txt", "content": big}))

	read := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}}`
	ctype, texts := postCall(t, tg.URL, c.GetSessionId(), read)
	if !strings.HasPrefix(ctype, "application/json") || len(texts) != 1 || texts[0] != big {
		t.Fatalf("read_file as JSON (%s): %d texts, first of %d bytes; want the %d written", ctype, len(texts), len(first(texts)), len(big))
	}

	// A progress token makes the call stream notifications, so the
	// result comes as the last event of an SSE stream.
	shell := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":"cat big.txt"},"_meta":{"progressToken":"p"}}}`
	ctype, texts = postCall(t, tg.URL, c.GetSessionId(), shell)
	if !strings.HasPrefix(ctype, "text/event-stream") || len(texts) == 0 || !strings.Contains(texts[0], big) {
		t.Fatalf("run_shell as SSE (%s): %d texts, first of %d bytes; want one holding the %d-byte output", ctype, len(texts), len(first(texts)), len(big))
	}
}

// postCall posts one tools/call in session and returns the response's
// content type and the text contents of its result, from a JSON body or
// from the last event of an SSE stream.
func postCall(t *testing.T, url, session, body string) (string, []string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var message string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			message = data
		} else if strings.HasPrefix(line, "{") {
			message = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(message), &rpc); err != nil {
		t.Fatalf("response is not JSON-RPC (%v): %.200s", err, message)
	}
	var texts []string
	for _, ct := range rpc.Result.Content {
		texts = append(texts, ct.Text)
	}
	return resp.Header.Get("Content-Type"), texts
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
