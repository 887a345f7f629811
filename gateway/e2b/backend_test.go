package e2b_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem/filesystemconnect"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process/processconnect"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const testToken = "test-access-token"

// testBackend serves one sandbox of a real runner (sandboxtest.Local)
// to the holder of testToken. The control plane is not offered: the
// embedded nil Backend panics if a test reaches it.
type testBackend struct {
	e2b.Backend
	runner *testRunner
	// openRegular, when set, makes the sandbox's Runner an
	// e2b.HostReader that opens files with it.
	openRegular func(path string) (*os.File, fs.FileInfo, error)
}

func (b *testBackend) Open(_ context.Context, id, token, _ string) (e2b.Runner, error) {
	if id != b.runner.id || token != testToken {
		return nil, fmt.Errorf("sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	if b.openRegular != nil {
		return hostRunner{b.runner, b.openRegular}, nil
	}
	return b.runner, nil
}

// hostRunner is a testRunner that also opens files itself.
type hostRunner struct {
	*testRunner
	open func(path string) (*os.File, fs.FileInfo, error)
}

func (r hostRunner) OpenRegular(path string) (*os.File, fs.FileInfo, error) { return r.open(path) }

// testRunner runs every call on its client, if the token's scopes
// cover it, and records the ops it was asked for.
type testRunner struct {
	id     string
	c      *protocol.Client
	scopes []string

	// finished, when not nil, receives each op whose Do has returned.
	finished chan e2b.Op

	mu  sync.Mutex
	ops []e2b.Op
}

func (r *testRunner) ID() string { return r.id }

func (r *testRunner) Do(ctx context.Context, op e2b.Op, fn func(context.Context, *protocol.Client) error) error {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
	if !slices.Contains(r.scopes, op.Scope) {
		return fmt.Errorf("%s needs the %s scope, which this token lacks: %w", op.Name, op.Scope, e2b.ErrForbidden)
	}
	if r.finished != nil {
		defer func() { r.finished <- op }()
	}
	return fn(ctx, r.c)
}

func (r *testRunner) recorded() []e2b.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// env is one sandbox served through the API, with Connect clients that
// speak to it as the SDKs do (JSON codec, HTTP/1.1).
type env struct {
	proc      processconnect.ProcessClient
	fs        filesystemconnect.FilesystemClient
	runner    *testRunner
	backend   *testBackend
	workspace string // the sandbox's workspace on this host
	local     *sandboxtest.Local
	id        string
	url       string
}

// newEnv starts a sandbox and serves it; scopes default to all.
func newEnv(t *testing.T, scopes ...string) *env {
	t.Helper()
	if len(scopes) == 0 {
		scopes = auth.AllScopes
	}
	local := sandboxtest.NewLocal(t)
	sb, err := local.Create(t.Context(), sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := protocol.Dial(t.Context(), sb.Dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &testRunner{id: sb.ID(), c: c, scopes: scopes}
	backend := &testBackend{runner: r}
	srv := httptest.NewServer(e2b.New(e2b.Options{Backend: backend}))
	t.Cleanup(srv.Close)
	e := &env{runner: r, backend: backend, workspace: local.Workspace(sb.ID()), local: local, id: sb.ID(), url: srv.URL}
	e.proc, e.fs = e.clients(testToken)
	return e
}

// clients returns Connect clients that send token.
func (e *env) clients(token string) (processconnect.ProcessClient, filesystemconnect.FilesystemClient) {
	h := http.Header{}
	h.Set("E2b-Sandbox-Id", e.id)
	h.Set("E2b-Sandbox-Port", e2b.EnvdPort)
	h.Set("X-Access-Token", token)
	h.Set("Keepalive-Ping-Interval", "50")
	h.Set("Authorization", "Basic dXNlcjo=") // "user:", which the SDKs send and the API ignores
	hc := &http.Client{Transport: headerTransport{h: h, base: http.DefaultTransport}}
	return processconnect.NewProcessClient(hc, e.url, connect.WithProtoJSON()),
		filesystemconnect.NewFilesystemClient(hc, e.url, connect.WithProtoJSON())
}

// headerTransport adds the sandbox headers to every request.
type headerTransport struct {
	h    http.Header
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// guard bounds a test's wait for events so that a bug fails it instead
// of hanging; it is far above anything the operations need.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// request is a data-plane request as the SDKs send it.
type request struct {
	method, path string
	port         string // e2b.EnvdPort when empty
	token        string // testToken when empty; "-" for none
	contentType  string
	header       map[string]string
	body         io.Reader
}

// do sends req and returns the response, whose body the test closes.
func (e *env) do(t *testing.T, req request) *http.Response {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), req.method, e.url+req.path, req.body)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("E2b-Sandbox-Id", e.id)
	r.Header.Set("E2b-Sandbox-Port", cmpOr(req.port, e2b.EnvdPort))
	if tok := cmpOr(req.token, testToken); tok != "-" {
		r.Header.Set("X-Access-Token", tok)
	}
	if req.contentType != "" {
		r.Header.Set("Content-Type", req.contentType)
	}
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
