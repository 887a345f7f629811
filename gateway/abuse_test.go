package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// startProductionGateway starts a test gateway served the way
// cmd/gateway serves it: gateway.NewHTTPServer behind
// gateway.LimitListener, with opts (zero fields take the defaults).
func startProductionGateway(t *testing.T, opts gateway.HTTPOptions) *testGateway {
	t.Helper()
	sandboxtest.RequireImage(t, testImage)
	runner := sandboxtest.RunnerBinary(t)
	varDir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(varDir) })
	tg := &testGateway{Instance: "t" + randHex(6), VarDir: varDir}
	tg.serve = func(h http.Handler) *httptest.Server {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &httptest.Server{Listener: gateway.LimitListener(ln, opts), Config: gateway.NewHTTPServer(h, opts)}
		srv.Start()
		return srv
	}
	tg.start(t, runner, nil)
	t.Cleanup(func() { tg.Close() })
	return tg
}

// abuseClient never waits for ever: a hang is a failure, not a stuck
// test. The bound is for hangs, not speed: on a loaded 2-core machine
// with a disk writer beside it, streaming a 90 MiB body in took over 10 s.
var abuseClient = &http.Client{Timeout: time.Minute}

// reply is what the gateway answered to one raw request.
type reply struct {
	Status  int
	Header  http.Header
	Body    string
	Code    int    // JSON-RPC error code, 0 if none
	Message string // JSON-RPC error message
	Result  json.RawMessage
}

// postRaw sends body to u as one MCP POST with the given session id.
func postRaw(t *testing.T, u, session, body string, hdr map[string]string) reply {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := abuseClient.Do(req)
	if err != nil {
		t.Fatalf("POST %.60q: %v", body, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
	data := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(rest)
			}
		}
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &m) == nil {
		r.Code, r.Message, r.Result = m.Error.Code, m.Error.Message, m.Result
	}
	return r
}

// initSession opens a legacy session by hand and returns its id.
func initSession(t *testing.T, u string) string {
	t.Helper()
	r := postRaw(t, u, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"abuse","version":"1"}}}`, nil)
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	return sid
}

// mustStillServe fails unless the gateway still answers a plain request.
func mustStillServe(t *testing.T, u, session string) {
	t.Helper()
	r := postRaw(t, u, session, `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Result), "run_shell") {
		t.Fatalf("gateway stopped answering: %d %.200s", r.Status, r.Body)
	}
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// TestMalformedJSONRPC: every malformed message gets a precise answer,
// none crashes or hangs the gateway.
func TestMalformedJSONRPC(t *testing.T) {
	t.Parallel()
	tg := startProductionGateway(t, gateway.HTTPOptions{})
	sid := initSession(t, tg.URL)
	cases := []struct {
		name, body string
		status     int
		code       int    // 0: a result, or no JSON-RPC body
		msg        string // substring of the error message or body
	}{
		{"invalid json", `{"jsonrpc":"2.0","id":1,"method":`, 400, -32700, "not valid json"},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, 200, -32600, "JSON-RPC version"},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, 400, -32600, `needs a "method"`},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"no/such"}`, 200, -32601, "not found"},
		{"bad params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, 400, -32602, `needs params {"name"`},
		{"non-object params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}`, 400, -32602, `needs params {"name"`},
		{"missing params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, 400, -32602, `needs params {"name"`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, 400, -32600, "batches are not supported"},
		{"deep nesting 10k", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":` + nested(10_000) + `}}`, 400, -32700, "not valid json"},
		{"deep object nesting 1M", strings.Repeat(`{"a":`, 1_000_000) + "1" + strings.Repeat("}", 1_000_000), 400, -32700, "not valid json"},
		{"deep nesting 1M", nested(1_000_000), 400, -32600, "batches are not supported"},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"no/such"}`, 200, -32601, "no/such"},
		{"case-variant method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"x"}`, 200, -32601, "x"},
		{"unknown tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, 200, -32602, "no_such_tool"},
		{"null body", `null`, 400, -32600, `needs a "method"`},
		{"empty body", ``, 400, -32700, "not valid json"},
	}
	for _, c := range cases {
		start := time.Now()
		r := postRaw(t, tg.URL, sid, c.body, nil)
		t.Logf("%s: %d code=%d message=%q (%v)", c.name, r.Status, r.Code, r.Message, time.Since(start).Round(time.Millisecond))
		if r.Status != c.status || r.Code != c.code || !strings.Contains(r.Message+r.Body, c.msg) {
			t.Errorf("%s: %d code=%d %.300s; want %d code=%d containing %q", c.name, r.Status, r.Code, r.Body, c.status, c.code, c.msg)
		}
		mustStillServe(t, tg.URL, sid)
	}
}

// TestWrongArgumentType: arguments of the wrong type are a tool error
// naming the field.
func TestWrongArgumentType(t *testing.T) {
	t.Parallel()
	tg := startProductionGateway(t, gateway.HTTPOptions{})
	sid := initSession(t, tg.URL)
	r := postRaw(t, tg.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_shell","arguments":{"command":42}}}`, nil)
	t.Logf("wrong type: %d %.300s", r.Status, r.Result)
	if r.Status != 200 || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "command") {
		t.Fatalf("wrong argument type: %d %s", r.Status, r.Body)
	}
	r = postRaw(t, tg.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_shell","arguments":"ls"}}`, nil)
	t.Logf("non-object arguments: %d code=%d %q %.200s", r.Status, r.Code, r.Message, r.Result)
	if r.Status != 200 || (r.Code == 0 && !strings.Contains(string(r.Result), `"isError":true`)) {
		t.Fatalf("non-object arguments: %d %s", r.Status, r.Body)
	}
	mustStillServe(t, tg.URL, sid)
}

// TestSessionAbuse: unknown, foreign-origin and deleted-session requests.
func TestSessionAbuse(t *testing.T) {
	t.Parallel()
	tg := startProductionGateway(t, gateway.HTTPOptions{})
	sid := initSession(t, tg.URL)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if r := postRaw(t, tg.URL, "no-such-session", list, nil); r.Status != 404 || !strings.Contains(r.Body, "not found") {
		t.Errorf("unknown session: %d %s", r.Status, r.Body)
	}
	if r := postRaw(t, tg.URL, sid, list, map[string]string{"Origin": "https://evil.example"}); r.Status != 403 {
		t.Errorf("foreign Origin: %d %s", r.Status, r.Body)
	}
	deleteSession(t, tg.URL, sid)
	if r := postRaw(t, tg.URL, sid, list, nil); r.Status != 404 || !strings.Contains(r.Body, "terminated") {
		t.Errorf("after DELETE: %d %s", r.Status, r.Body)
	}
}

// TestAuthAbuse: with authentication on, missing, garbage and
// query-string tokens are refused precisely.
func TestAuthAbuse(t *testing.T) {
	t.Parallel()
	og := startOAuthGateway(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"abuse","version":"1"}}}`
	r := postRaw(t, og.URL, "", init, nil)
	if www := r.Header.Get("WWW-Authenticate"); r.Status != 401 || !strings.Contains(www, "resource_metadata=") {
		t.Errorf("no token: %d %q", r.Status, www)
	}
	r = postRaw(t, og.URL, "", init, map[string]string{"Authorization": "Bearer not.a.jwt"})
	if www := r.Header.Get("WWW-Authenticate"); r.Status != 401 || !strings.Contains(www, `error="invalid_token"`) {
		t.Errorf("garbage token: %d %q", r.Status, www)
	}
	r = postRaw(t, og.URL+"?access_token=abc", "", init, nil)
	if r.Status != 400 {
		t.Errorf("query-string token: %d %s", r.Status, r.Body)
	}
}

// TestOversizedRequests: bodies over the limit are refused with 413
// before they are read, and headers over MaxHeaderBytes with 431.
func TestOversizedRequests(t *testing.T) {
	t.Parallel()
	tg := startProductionGateway(t, gateway.HTTPOptions{})
	sid := initSession(t, tg.URL)
	host := strings.TrimPrefix(strings.TrimSuffix(tg.URL, "/mcp"), "http://")

	t.Run("declared length, body never sent", func(t *testing.T) {
		start := time.Now()
		status := rawExchange(t, host, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, 200<<20))
		t.Logf("Content-Length 200 MiB: %q after %v", status, time.Since(start).Round(time.Millisecond))
		if !strings.Contains(status, " 413 ") || time.Since(start) > 2*time.Second {
			t.Fatalf("got %q after %v, want 413 at once", status, time.Since(start))
		}
	})
	t.Run("chunked", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, tg.URL, io.LimitReader(zeros{}, 100<<20))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := abuseClient.Do(req)
		if err != nil {
			t.Fatalf("chunked 100 MiB: %v", err)
		}
		resp.Body.Close()
		t.Logf("chunked 100 MiB: %d %v", resp.StatusCode, req.TransferEncoding)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked 100 MiB: %d, want 413", resp.StatusCode)
		}
	})
	t.Run("headers", func(t *testing.T) {
		r := postRaw(t, tg.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"X-Big": strings.Repeat("a", 100<<10)})
		t.Logf("100 KiB header: %d %q", r.Status, r.Body)
		if r.Status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("100 KiB header: %d, want 431", r.Status)
		}
	})
	mustStillServe(t, tg.URL, sid)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// rawExchange writes head on a fresh connection and returns the status
// line of the answer.
func rawExchange(t *testing.T, host, head string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read status: %v", err)
	}
	return strings.TrimSpace(line)
}

// TestSlowloris: a client sending its headers a line at a time is cut
// off at the read-header timeout.
func TestSlowloris(t *testing.T) {
	t.Parallel()
	tg := startProductionGateway(t, gateway.HTTPOptions{ReadHeaderTimeout: time.Second})
	host := strings.TrimPrefix(strings.TrimSuffix(tg.URL, "/mcp"), "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c) // returns when the gateway closes
		closed <- err
	}()
	io.WriteString(c, "POST /mcp HTTP/1.1\r\n")
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case err := <-closed:
			d := time.Since(start)
			t.Logf("slowloris closed after %v (%d header lines sent), read error %v", d.Round(time.Millisecond), i, err)
			if d < 900*time.Millisecond || d > 5*time.Second {
				t.Fatalf("closed after %v, want about the 1 s read-header timeout", d)
			}
			return
		case <-tick.C:
			fmt.Fprintf(c, "X-Slow-%d: x\r\n", i)
		case <-time.After(10 * time.Second):
			t.Fatal("slowloris connection still open after 10 s")
		}
	}
}

// TestIdleConnectionsAreBounded: thousands of connections that never send
// a request cost at most MaxConnections goroutines; the excess waits in
// the accept queue, and a normal client is served once they go.
func TestIdleConnectionsAreBounded(t *testing.T) {
	const limit, idle = 256, 3000
	tg := startProductionGateway(t, gateway.HTTPOptions{MaxConnections: limit, ReadHeaderTimeout: time.Minute})
	sid := initSession(t, tg.URL)
	abuseClient.CloseIdleConnections()
	host := strings.TrimPrefix(strings.TrimSuffix(tg.URL, "/mcp"), "http://")

	g0, m0 := settle()
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range idle {
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err != nil {
			t.Logf("dial %d: %v (refused past the accept queue)", len(conns), err)
			break
		}
		conns = append(conns, c)
	}
	g1, m1 := settle()
	t.Logf("%d idle connections (limit %d): goroutines %d -> %d (+%d), heap in use %.1f -> %.1f MiB", len(conns), limit, g0, g1, g1-g0, mib(m0), mib(m1))
	if g1-g0 > limit+64 {
		t.Errorf("goroutines grew by %d for %d idle connections; want at most about %d", g1-g0, len(conns), limit)
	}

	// While every slot is held, a new client waits rather than being served.
	busy := &http.Client{Timeout: 500 * time.Millisecond}
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(tg.URL, "/mcp")+"/healthz", nil)
	if resp, err := busy.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("served while %d connections hold every slot: %d", len(conns), resp.StatusCode)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	mustStillServe(t, tg.URL, sid)
	g2, m2 := settle()
	t.Logf("after closing: goroutines %d, heap in use %.1f MiB", g2, mib(m2))
}

// settle lets goroutines start or finish and returns the goroutine count
// and heap in use.
func settle() (int, uint64) {
	time.Sleep(time.Second)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// TestSlowBodyIsCutOff: a client trickling its request body cannot hold a
// connection for ever; it gets 408 at the body deadline.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.BodyReadTimeout = time.Second })
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"jsonrpc":"2.0",`))
		time.Sleep(5 * time.Second) // never finishes in time
		pw.Close()
	}()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, tg.URL, pr)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 4*time.Second {
		t.Fatalf("trickled body: %d after %v; want 408 after about 1 s", resp.StatusCode, time.Since(start))
	}
}
