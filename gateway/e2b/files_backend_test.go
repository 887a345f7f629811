package e2b_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// filesToken is the access token filesBackend accepts.
const filesToken = "files-test-token"

// filesBackend serves the data plane of one real sandbox (a Local
// runner) to the API: Open checks a fixed token, and its Runner checks
// each Op's scope against a fixed set, as the gateway's does, before
// running fn on the real runner connection. The control-plane methods
// are not used by these tests (the embedded nil Backend panics).
type filesBackend struct {
	e2b.Backend
	id     string
	client *protocol.Client
	scopes []string

	// finished, when not nil, receives each op whose Do has returned.
	finished chan e2b.Op

	mu  sync.Mutex
	ops []e2b.Op
}

func (b *filesBackend) Open(_ context.Context, id, token string) (e2b.Runner, error) {
	if id != b.id || token != filesToken {
		return nil, fmt.Errorf("sandbox %s does not exist: %w", id, sandbox.ErrNotFound)
	}
	return filesRunner{b}, nil
}

// recorded returns the ops run so far.
func (b *filesBackend) recorded() []e2b.Op {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.ops)
}

type filesRunner struct{ b *filesBackend }

func (r filesRunner) ID() string { return r.b.id }

func (r filesRunner) Do(ctx context.Context, op e2b.Op, fn func(context.Context, *protocol.Client) error) error {
	if !slices.Contains(r.b.scopes, op.Scope) {
		return fmt.Errorf("%s needs the %s scope, which this token lacks: %w", op.Name, op.Scope, e2b.ErrForbidden)
	}
	r.b.mu.Lock()
	r.b.ops = append(r.b.ops, op)
	r.b.mu.Unlock()
	if r.b.finished != nil {
		defer func() { r.b.finished <- op }()
	}
	return fn(ctx, r.b.client)
}

// filesEnv is one sandbox behind the API, served over HTTP.
type filesEnv struct {
	url       string
	sandbox   string
	workspace string // the sandbox's workspace on the host
	backend   *filesBackend
}

// newFilesEnv starts a sandbox whose token carries scopes (all data-plane
// scopes when none are given) and serves the API for it.
func newFilesEnv(t *testing.T, scopes ...string) *filesEnv {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{auth.ScopeFilesRead, auth.ScopeFilesWrite, auth.ScopeExec}
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
	b := &filesBackend{id: sb.ID(), client: c, scopes: scopes}
	srv := httptest.NewServer(e2b.New(e2b.Options{Backend: b}))
	t.Cleanup(srv.Close)
	return &filesEnv{url: srv.URL, sandbox: sb.ID(), workspace: local.Workspace(sb.ID()), backend: b}
}

// request is a data-plane request as the SDKs send it.
type request struct {
	method, path string
	port         string // e2b.EnvdPort when empty
	token        string // filesToken when empty; "-" for none
	contentType  string
	header       map[string]string
	body         io.Reader
}

// do sends req and returns the response, whose body the test closes.
func (e *filesEnv) do(t *testing.T, req request) *http.Response {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), req.method, e.url+req.path, req.body)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("E2b-Sandbox-Id", e.sandbox)
	r.Header.Set("E2b-Sandbox-Port", cmpOr(req.port, e2b.EnvdPort))
	if tok := cmpOr(req.token, filesToken); tok != "-" {
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
