package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
)

// listeningClient connects a 2025-11-25 client that opens the standalone
// GET stream itself, as mcp-go's client does when asked to listen.
func listeningClient(t *testing.T, url string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "sandgate-listening-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// awaitUnasked waits for a notification of method (with uri, if not "")
// without sending a request, so it can only come on the GET stream;
// poke, if given, makes the server announce again (the stream may open
// after the first announcement, which then waits for a response).
func (n *notes) awaitUnasked(t *testing.T, method, uri string, poke func()) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !n.has(method, uri) {
		select {
		case <-n.cond:
		case <-time.After(time.Second):
			if poke != nil {
				poke()
			}
		case <-deadline:
			t.Fatalf("no %s for %q on the standalone stream", method, uri)
		}
	}
}

// TestLocalStandaloneResourceUpdated: a legacy client with the GET stream
// open subscribes to a file; a background process in its sandbox edits
// it, and resources/updated and list_changed arrive while the client
// sends nothing.
func TestLocalStandaloneResourceUpdated(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := listeningClient(t, tg.URL)
	got := collect(c)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "watched.txt", "content": "v1"}))
	var uri string
	for _, u := range listURIs(t, c) {
		if strings.HasSuffix(u, "/watched.txt") {
			uri = u
		}
	}
	if err := c.Subscribe(t.Context(), subscribeReq(uri)); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	// The watch starts asynchronously and the stream may open late: the
	// process edits for a minute, well after its call returned.
	shell(t, c, "for i in $(seq 600); do echo $i >> watched.txt; touch new-$i; sleep 0.1; done", map[string]any{"background": true})
	got.reset()
	got.awaitUnasked(t, mcp.MethodNotificationResourceUpdated, uri, nil)
	got.awaitUnasked(t, mcp.MethodNotificationResourcesListChanged, "", nil)
}

// TestLocalStandaloneToolsListChanged: a manifest added to the tools
// directory is announced on the GET stream of a client that sends
// nothing.
func TestLocalStandaloneToolsListChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := listeningClient(t, tg.URL)
	got := collect(c)
	version := 0
	announce := func() {
		version++
		m := maps.Clone(echoArgs)
		m["description"] = fmt.Sprintf("Print the arguments (version %d).", version)
		putManifest(t, dir, "echo.json", m)
	}
	announce()
	got.awaitUnasked(t, mcp.MethodNotificationToolsListChanged, "", announce)
}

// TestLocalStandaloneNoDuplicate: a tools/list_changed that went out on
// the session's GET stream does not come again with its next response
// (mcp-go queues a copy for every session); once the stream is closed,
// the next one comes with a response, as without a stream.
func TestLocalStandaloneNoDuplicate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := legacyClient(t, tg.URL) // opens no stream itself: it sees only responses
	changed := listChanges(c)
	s := openStream(t, tg.URL, c.GetSessionId())
	putManifest(t, dir, "echo.json", echoArgs)
	select {
	case n := <-s.events:
		if n.Method != mcp.MethodNotificationToolsListChanged {
			t.Fatalf("first event on the stream: %s, want tools/list_changed", n.Method)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no tools/list_changed on the stream")
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Error("tools/list_changed came again with the next response")
	default:
	}
	s.resp.Body.Close()
	other := maps.Clone(echoArgs)
	other["name"] = "echo_other"
	putManifest(t, dir, "other.json", other)
	awaitListChanged(t, c, changed)
}

// TestLocalStandaloneKeepsCallOutput: with the GET stream open, every
// chunk of a call's output still arrives on the call's own response,
// before its result.
func TestLocalStandaloneKeepsCallOutput(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := listeningClient(t, tg.URL)
	if err := c.SetLevel(t.Context(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
		t.Fatal(err)
	}
	got := collect(c)
	for round := range 5 {
		got.reset()
		r, _ := shell(t, c, "for i in $(seq 300); do echo line-$i; done", nil)
		var streamed strings.Builder
		got.mu.Lock()
		for _, note := range got.got {
			if note.Method == "notifications/message" && note.Params.AdditionalFields["logger"] == "stdout" {
				s, _ := note.Params.AdditionalFields["data"].(string)
				streamed.WriteString(s)
			}
		}
		got.mu.Unlock()
		if streamed.String() != r.Stdout || r.Stdout == "" {
			t.Fatalf("round %d: %d bytes of stdout streamed before the result, want all %d", round, streamed.Len(), len(r.Stdout))
		}
	}
}

// sseStream is a raw GET /mcp stream's events, read as they come.
type sseStream struct {
	resp   *http.Response
	events chan mcp.JSONRPCNotification
	ended  chan struct{}
}

// openStream opens GET /mcp for session; it fails the test unless the
// gateway answers 200 with an event stream.
func openStream(t *testing.T, url, session string) *sseStream {
	t.Helper()
	resp := getStream(t, url, session, "", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /mcp: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	s := &sseStream{resp: resp, events: make(chan mcp.JSONRPCNotification, 64), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var n mcp.JSONRPCNotification
			if ok && json.Unmarshal([]byte(data), &n) == nil {
				s.events <- n
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// getStream sends GET /mcp with a session id, a bearer token and extra
// headers, each only when given.
func getStream(t *testing.T, url, session, token string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// awaitEnd waits for the stream to end, as the gateway closes it.
func (s *sseStream) awaitEnd(t *testing.T, why string) {
	t.Helper()
	select {
	case <-s.ended:
	case <-time.After(60 * time.Second):
		t.Fatalf("the GET stream did not end after %s", why)
	}
}

// TestLocalStandaloneStreamLifetime: a second GET of a session replaces
// the first, which ends, and notifications go to the new one; a DELETE
// of the session ends the stream.
func TestLocalStandaloneStreamLifetime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tg := startLocalGateway(t, func(c *gateway.Config) { c.ToolsDir = dir })
	c := legacyClient(t, tg.URL)
	sid := c.GetSessionId()
	first := openStream(t, tg.URL, sid)
	second := openStream(t, tg.URL, sid)
	first.awaitEnd(t, "a second GET of its session")

	putManifest(t, dir, "echo.json", echoArgs)
	select {
	case n := <-second.events:
		if n.Method != mcp.MethodNotificationToolsListChanged {
			t.Errorf("first event on the stream: %s, want tools/list_changed", n.Method)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no tools/list_changed on the replacing stream")
	}
	deleteSession(t, tg.URL, sid)
	second.awaitEnd(t, "DELETE of its session")
}

// TestLocalStandaloneStreamRefused: GET /mcp needs a session, the
// caller's own, and an Accept that admits SSE; 2026-07-28 has no GET.
func TestLocalStandaloneStreamRefused(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	for _, tc := range []struct {
		name, session string
		header        map[string]string
		status        int
	}{
		{"no session", "", nil, http.StatusBadRequest},
		{"unknown session", "no-such-session", nil, http.StatusNotFound},
		{"modern protocol", c.GetSessionId(), map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, http.StatusMethodNotAllowed},
		{"no SSE in Accept", c.GetSessionId(), map[string]string{"Accept": "application/json"}, http.StatusNotAcceptable},
		{"foreign origin", c.GetSessionId(), map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := getStream(t, tg.URL, tc.session, "", tc.header)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("GET /mcp: %d %s, want %d", resp.StatusCode, body, tc.status)
			}
		})
	}
}

// TestLocalStandaloneStreamIdentity: with OAuth, GET /mcp needs a valid
// token (401), and another principal's session is not found (404).
func TestLocalStandaloneStreamIdentity(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	owner := bearerClient(t, og.URL, clientToken(t, og, "owner", "sandbox:exec"))
	stranger := clientToken(t, og, "stranger", "sandbox:exec")
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"bad token", "not-a-token", http.StatusUnauthorized},
		{"another principal", stranger, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := getStream(t, og.URL, owner.GetSessionId(), tc.token, nil)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("GET /mcp: %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}
