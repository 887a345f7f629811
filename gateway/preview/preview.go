// Package preview serves preview ports: HTTP, server-sent events and
// WebSocket to a port a program listens on inside a sandbox, at
// /sandboxes/{id}/ports/{port}/ on the gateway's origin, for the
// sandbox's owner (their bearer token, as for /mcp).
//
// The sandbox has no network interface: each connection goes through its
// runner (protocol.DialIngress), which dials the port on the sandbox's
// loopback. The proxy is net/http/httputil's ReverseProxy, which streams
// bodies both ways with bounded buffers, flushes every write (events
// arrive as sent) and carries protocol upgrades (a dev server's
// hot-reload WebSocket).
//
// Served on the gateway's own origin, a preview must not act as the
// gateway's: every response is served with a Content-Security-Policy
// sandbox (an opaque origin: its scripts run, but cannot read the
// gateway's cookies or storage, nor call the gateway as the user), its
// Set-Cookie headers are dropped, and the caller's credentials
// (Authorization, Cookie) never reach the sandbox. Host-based routing,
// on an origin of the preview's own, is for production deployments (see
// docs/preview.md).
package preview

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/runner/protocol"
)

// Route is the path pattern the handler serves (http.ServeMux).
const Route = "/sandboxes/{id}/ports/{port}/"

// DefaultMaxConns bounds the preview requests (and upgraded
// connections) open to one sandbox at once.
const DefaultMaxConns = 64

// Config configures the preview handler.
type Config struct {
	Fleet *fleet.Fleet
	Audit audit.Sink
	Log   *slog.Logger
	// Local is every caller when authentication is off (no verified
	// token in the request's context).
	Local identity.Identity
	// MaxConns is DefaultMaxConns when 0.
	MaxConns int
}

// Handler serves Route.
type Handler struct {
	cfg     Config
	mu      sync.Mutex
	conns   map[string]int // open requests per sandbox id
	records sync.WaitGroup // audit records being written

	transport *http.Transport
}

// New returns the preview handler.
func New(cfg Config) *Handler {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	return &Handler{cfg: cfg, conns: map[string]int{}, transport: &http.Transport{
		// Each request dials through its sandbox's runner (dialKey).
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d, ok := ctx.Value(dialKey{}).(*countingDial)
			if !ok {
				return nil, errors.New("preview: a request without its sandbox")
			}
			return d.DialContext(ctx, network, addr)
		},
		// One runner connection per request: nothing outlives the
		// request, and no connection is shared between sandboxes.
		DisableKeepAlives: true,
	}}
}

// dialKey is the context key of a preview request's countingDial.
type dialKey struct{}

// csp makes a preview document an opaque origin on the gateway's.
const csp = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.PathValue("id")
	port, err := protocol.ParsePort(r.PathValue("port"))
	if err != nil {
		http.Error(w, "preview: "+err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := resource.IdentityFrom(r.Context())
	switch {
	case !ok:
		p = h.cfg.Local // authentication is off
	case !p.HasScope(auth.ScopeExec):
		// What a preview reaches runs code on the sandbox's behalf.
		http.Error(w, "preview: insufficient scope: a preview port needs "+auth.ScopeExec, http.StatusForbidden)
		return
	}
	b, err := h.cfg.Fleet.Get(r.Context(), p, "", id)
	if err != nil {
		http.Error(w, fmt.Sprintf("preview: sandbox %q not found (previews are for the sandbox's owner, by id)", id), http.StatusNotFound)
		return
	}
	if !h.open(id) {
		http.Error(w, fmt.Sprintf("preview: sandbox %s has %d preview connections open, the most it may: close some", id, h.cfg.MaxConns), http.StatusTooManyRequests)
		return
	}
	defer h.closed(id)
	// As any call: a paused sandbox resumes, a dead runner is replaced,
	// and the sandbox counts as in use (not idle) while the request runs.
	if _, _, err := h.cfg.Fleet.Attach(r.Context(), b, p); err != nil {
		http.Error(w, "preview: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer b.Release()

	counted := &countingDial{dial: b.Sandbox().Dial, port: port}
	status := 0
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			pr.Out.Host = pr.Out.URL.Host
			prefix := "/sandboxes/" + id + "/ports/" + strconv.Itoa(port)
			pr.Out.URL.Path = "/" + strings.TrimPrefix(strings.TrimPrefix(pr.In.URL.Path, prefix), "/")
			pr.Out.URL.RawPath = ""
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			pr.SetXForwarded()
		},
		Transport:     h.transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			status = resp.StatusCode
			resp.Header.Del("Set-Cookie")
			resp.Header.Set("Content-Security-Policy", csp)
			resp.Header.Set("X-Content-Type-Options", "nosniff")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			status = http.StatusBadGateway
			msg := err.Error()
			var pe *protocol.Error
			if errors.As(err, &pe) {
				msg = pe.Message
			}
			if errors.Is(err, context.Canceled) {
				return // the client went away
			}
			http.Error(w, "preview: "+msg, status)
		},
	}
	proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), dialKey{}, counted)))
	// The record is written beside the next request, not before it: a
	// keep-alive connection's next request waits for this handler, and
	// the audit log's commit (an fsync) took milliseconds. It is written
	// after the exchange either way, so a crash can lose the same records.
	h.records.Add(1)
	go func() {
		defer h.records.Done()
		h.record(r, p, id, port, status, counted, start)
	}()
}

// Wait waits for the audit records of finished requests to be written.
func (h *Handler) Wait() { h.records.Wait() }

// open counts one more request open to sandbox id, unless it has
// MaxConns open already.
func (h *Handler) open(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns[id] >= h.cfg.MaxConns {
		return false
	}
	h.conns[id]++
	return true
}

// closed counts a request to sandbox id done.
func (h *Handler) closed(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns[id]--; h.conns[id] <= 0 {
		delete(h.conns, id)
	}
}

// record writes the ingress.request audit record of one request: who,
// which sandbox and port, what was asked (the path without its query,
// which may carry secrets), the answer and the bytes each way.
func (h *Handler) record(r *http.Request, p identity.Identity, id string, port, status int, c *countingDial, start time.Time) {
	outcome := audit.OutcomeOK
	if status == 0 || status >= 500 {
		outcome = audit.OutcomeError
	}
	ev := &audit.Event{Kind: audit.KindIngress, Principal: p, SandboxID: id, Outcome: outcome,
		DurationMs: time.Since(start).Milliseconds(),
		Summary: map[string]string{"port": strconv.Itoa(port), "method": r.Method, "path": audit.Clip(r.URL.Path, 200),
			"status": strconv.Itoa(status), "bytes_in": strconv.FormatInt(c.toSandbox.Load(), 10),
			"bytes_out": strconv.FormatInt(c.fromSandbox.Load(), 10), "upgrade": r.Header.Get("Upgrade")}}
	if err := h.cfg.Audit.Append(context.WithoutCancel(r.Context()), ev); err != nil {
		h.cfg.Log.Error("audit append failed", "kind", ev.Kind, "sandbox_id", id, "error", err)
	}
}

// countingDial dials a sandbox port through its runner and counts the
// bytes of the connections it made, both ways (upgraded ones included).
type countingDial struct {
	dial        protocol.DialFunc
	port        int
	toSandbox   atomic.Int64
	fromSandbox atomic.Int64
}

func (c *countingDial) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	conn, err := protocol.DialIngress(ctx, c.dial, c.port)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: conn, d: c}, nil
}

type countedConn struct {
	net.Conn
	d *countingDial
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.d.fromSandbox.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.d.toSandbox.Add(int64(n))
	return n, err
}
