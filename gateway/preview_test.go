package gateway_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/preview"
)

// previewServer is the program a preview reaches: an HTTP server on the
// loopback (the in-process provider's runners run on the host, so its
// loopback is theirs), with a page, an event stream that waits for the
// test between events, an upload digest and a WebSocket echo. It
// records the headers its last request came with.
type previewServer struct {
	port     int
	lastHdr  chan http.Header
	nextEvnt chan struct{}
	release  chan struct{} // /hold answers once it is closed
}

func startPreviewServer(t testing.TB) *previewServer {
	t.Helper()
	ps := &previewServer{lastHdr: make(chan http.Header, 16), nextEvnt: make(chan struct{}), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		select {
		case ps.lastHdr <- r.Header.Clone():
		default: // nobody looks (a benchmark)
		}
		http.SetCookie(w, &http.Cookie{Name: "sandbox", Value: "x", Path: "/"})
		fmt.Fprintf(w, "hello %s?%s", r.URL.Path, r.URL.RawQuery)
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-ps.nextEvnt // the test has read the first event
		fmt.Fprint(w, "data: second\n\n")
	})
	mux.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 64 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-ps.release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		_ = c.Write(r.Context(), typ, append([]byte("echo: "), msg...))
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ps.port = ln.Addr().(*net.TCPAddr).Port
	return ps
}

// TestPreviewPort: a sandbox's port through /sandboxes/{id}/ports/{port}/
// for its owner: a page (the path under the prefix and the query passed
// on; the caller's Authorization and Cookie not; the sandbox's
// Set-Cookie dropped; a sandboxing CSP added), an event stream whose
// first event arrives while the server still holds the second, a 32 MiB
// upload whole, a WebSocket upgrade, a clear 502 for a port nothing
// listens on and 400 for a port that is not one; each request audited
// with its bytes.
func TestPreviewPort(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	ps := startPreviewServer(t)
	id := createOn(t, modernClient(t, tg.URL), nil)
	base := strings.TrimSuffix(tg.URL, "/mcp") + fmt.Sprintf("/sandboxes/%s/ports/%d", id, ps.port)

	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/hello?x=1", nil)
	req.Header.Set("Authorization", "Bearer not-for-the-sandbox")
	req.Header.Set("Cookie", "gateway=secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello /hello?x=1" {
		t.Fatalf("GET /hello through the preview: %d %q", resp.StatusCode, body)
	}
	if resp.Header.Get("Set-Cookie") != "" || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("preview response headers: Set-Cookie %q, CSP %q; want no cookie and a sandbox CSP", resp.Header.Get("Set-Cookie"), resp.Header.Get("Content-Security-Policy"))
	}
	hdr := <-ps.lastHdr
	if hdr.Get("Authorization") != "" || hdr.Get("Cookie") != "" || hdr.Get("X-Forwarded-Prefix") != fmt.Sprintf("/sandboxes/%s/ports/%d", id, ps.port) {
		t.Errorf("headers the sandbox got: %v; want no credentials, and the prefix", hdr)
	}

	resp, err = http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: first\n" {
		t.Fatalf("the first event while the server holds the second: %q %v", line, err)
	}
	close(ps.nextEvnt)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if !strings.Contains(string(rest), "data: second") {
		t.Fatalf("the rest of the stream: %q", rest)
	}

	upload := make([]byte, 32<<20)
	_, _ = rand.Read(upload)
	sum := sha256.Sum256(upload)
	resp, err = http.Post(base+"/upload", "application/octet-stream", bytes.NewReader(upload))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d %s", len(upload), hex.EncodeToString(sum[:])); string(body) != want {
		t.Fatalf("upload of 32 MiB: the sandbox got %q, want %q", body, want)
	}

	ws, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("WebSocket through the preview: %v", err)
	}
	defer ws.CloseNow()
	if err := ws.Write(t.Context(), websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := ws.Read(t.Context()); err != nil || string(msg) != "echo: hi" {
		t.Fatalf("WebSocket echo: %q %v", msg, err)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	free := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for _, tc := range []struct {
		url  string
		want int
		says string
	}{
		{strings.Replace(base, fmt.Sprint(ps.port), fmt.Sprint(free), 1) + "/", http.StatusBadGateway, "start a server"},
		{strings.Replace(base, fmt.Sprint(ps.port), "0", 1) + "/", http.StatusBadRequest, "1 to 65535"},
		{strings.Replace(base, fmt.Sprint(ps.port), "65536", 1) + "/", http.StatusBadRequest, "1 to 65535"},
		{strings.Replace(base, id, strings.Repeat("0", 32), 1) + "/", http.StatusNotFound, "not found"},
	} {
		resp, err := http.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.says) {
			t.Errorf("GET %s: %d %q; want %d saying %q", tc.url, resp.StatusCode, body, tc.want, tc.says)
		}
	}

	// The record is written once the exchange is over, after the answer.
	var uploads []map[string]string
	waitFor(t, time.Minute, "the upload's ingress.request record", func() bool {
		uploads = nil
		for _, e := range auditRecords(t, tg.AuditPath) {
			if e.Kind == audit.KindIngress && e.SandboxID == id && e.Summary["method"] == "POST" {
				uploads = append(uploads, e.Summary)
			}
		}
		return len(uploads) > 0
	})
	if len(uploads) != 1 || uploads[0]["status"] != "200" || len(uploads[0]["bytes_in"]) != len(fmt.Sprint(len(upload))) || uploads[0]["bytes_in"] < fmt.Sprint(len(upload)) {
		t.Errorf("ingress.request records of the upload: %v; want one, 200, with its %d bytes and its headers in", uploads, len(upload))
	}
}

// TestPreviewPortAuth: with OAuth on, a preview needs the owner's token
// with sandbox:exec: none is 401, another client's is 404, the owner's
// without the scope 403.
func TestPreviewPortAuth(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	ps := startPreviewServer(t)
	ownerID, ownerSecret, err := issuer.AddClient(og.AuthDir, "preview-owner", []string{"sandbox:exec", "sandbox:files:read"})
	if err != nil {
		t.Fatal(err)
	}
	ownerToken := func(scope string) string {
		tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}, ownerID+":"+ownerSecret)
		if code != http.StatusOK {
			t.Fatalf("token for the owner: %d", code)
		}
		return tr.AccessToken
	}
	id := newSandboxID(t, modernBearerClient(t, og.URL, ownerToken("sandbox:exec")))
	page := fmt.Sprintf("%s/sandboxes/%s/ports/%d/hello", og.Base, id, ps.port)
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"another client", clientToken(t, og, "preview-other", "sandbox:exec"), http.StatusNotFound},
		{"the owner without sandbox:exec", ownerToken("sandbox:files:read"), http.StatusForbidden},
		{"the owner", ownerToken("sandbox:exec"), http.StatusOK},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", page, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}

// TestPreviewPortOnDocker: in a real sandbox, which has no network
// interface, a server a tool started on 127.0.0.1 is reached through the
// preview path: the runner dials it on the sandbox's loopback.
func TestPreviewPortOnDocker(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := createOn(t, c, nil)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"sandbox_id": id, "path": "site/index.html", "content": "<p>from the sandbox</p>"}))
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"sandbox_id": id, "background": true,
		"command": "python3 -m http.server 8000 --bind 127.0.0.1 --directory /workspace/site"}))
	mustOK(t, "wait for the server", call(t, c, "run_shell", map[string]any{"sandbox_id": id,
		"command": `for i in $(seq 100); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/')" 2>/dev/null && exit 0; sleep 0.1; done; exit 1`}))
	resp, err := http.Get(strings.TrimSuffix(tg.URL, "/mcp") + "/sandboxes/" + id + "/ports/8000/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "<p>from the sandbox</p>" {
		t.Fatalf("the sandbox's server through the preview: %d %q", resp.StatusCode, body)
	}
}

// BenchmarkPreview measures what the preview path adds: a small GET to
// a server on the loopback directly and through the gateway's preview
// (an ingress connection through the sandbox's runner per request), and
// a 64 MiB download through the preview (MB/s on one connection). The
// in-process provider's runner runs on the host, as the server does.
func BenchmarkPreview(b *testing.B) {
	tg := startLocalGateway(b, nil)
	ps := startPreviewServer(b)
	id := createOn(b, modernClient(b, tg.URL), nil)
	proxied := strings.TrimSuffix(tg.URL, "/mcp") + fmt.Sprintf("/sandboxes/%s/ports/%d", id, ps.port)
	direct := fmt.Sprintf("http://127.0.0.1:%d", ps.port)
	get := func(b *testing.B, url string) {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			get(b, direct+"/hello")
		}
	})
	b.Run("proxied", func(b *testing.B) {
		for b.Loop() {
			get(b, proxied+"/hello")
		}
	})
	b.Run("download-64MiB", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for b.Loop() {
			get(b, proxied+"/blob")
		}
	})
}

// TestPreviewPortConnLimit: a sandbox takes at most 64 preview requests
// at once (the shipped default); one more is 429, saying so, and once
// one ends another gets in.
func TestPreviewPortConnLimit(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	ps := startPreviewServer(t)
	id := createOn(t, modernClient(t, tg.URL), nil)
	base := strings.TrimSuffix(tg.URL, "/mcp") + fmt.Sprintf("/sandboxes/%s/ports/%d", id, ps.port)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 100}}
	var held []*http.Response
	for range preview.DefaultMaxConns {
		resp, err := client.Get(base + "/hold") // answered with headers; the body stays open
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("hold %d: %v %v", len(held), resp, err)
		}
		held = append(held, resp)
	}
	resp, err := client.Get(base + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "64 preview connections open") {
		t.Fatalf("a request beyond %d open: %d %q; want 429 saying so", preview.DefaultMaxConns, resp.StatusCode, body)
	}
	held[0].Body.Close()
	waitFor(t, time.Minute, "a slot after one request ended", func() bool {
		resp, err := client.Get(base + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	close(ps.release)
	for _, r := range held[1:] {
		r.Body.Close()
	}
}
