package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/gateway/audit"
)

// maxBodyBytes bounds one MCP request body. The largest legitimate body is
// a write_file of the 64 MiB cap, base64-encoded.
const maxBodyBytes = 90 << 20

const sessionHeader = "Mcp-Session-Id"

// mcpMiddleware runs before mcp-go on every /mcp request: it rejects
// foreign origins and oversized bodies, attaches the principal, and
// enforces that a session id is only usable by the principal that
// created it (anyone else gets the same 404 as for an unknown id).
func (g *Server) mcpMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.originAllowed(r) {
			http.Error(w, "Forbidden: foreign Origin "+r.Header.Get("Origin"), http.StatusForbidden)
			return
		}
		if r.ContentLength > maxBodyBytes {
			http.Error(w, fmt.Sprintf("request body of %d bytes is above the %d byte limit", r.ContentLength, maxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		msg, err := peekMessage(r)
		if err != nil {
			writeBodyError(w, err)
			return
		}
		p := LocalPrincipal
		ctx := WithPrincipal(r.Context(), p)

		id := r.Header.Get(sessionHeader)
		modern := isModern(r, msg)
		switch {
		case id == "" && !modern && r.Method == http.MethodPost && msg.needsSession():
			http.Error(w, "Mcp-Session-Id header is required: send initialize first and pass the session id it returns (or use protocol 2026-07-28 with sandbox_create)", http.StatusBadRequest)
			return
		case id != "" && !modern:
			if !g.sessions.ownedBy(id, p.Digest()) {
				if term, _ := g.sessions.Validate(id); term {
					http.Error(w, "Session terminated; start a new session with initialize", http.StatusNotFound)
					return
				}
				http.Error(w, "Session not found; start a new session with initialize", http.StatusNotFound)
				return
			}
			g.sessions.touch(id)
			// Every request of a session, including a long-lived GET
			// stream, ends when the session does (DELETE, idle, lifetime).
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			if done := g.sessions.doneFor(id); done != nil {
				go func() {
					select {
					case <-done:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
		}
		r = r.WithContext(ctx)
		next.ServeHTTP(&bindingWriter{ResponseWriter: w, g: g, r: r, p: p}, r)
	})
}

// isModern reports whether r declares protocol 2026-07-28 or later, in
// its header or its body's _meta, as mcp-go decides it: such requests have
// no session, and the session header is ignored.
func isModern(r *http.Request, msg rpcMessage) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= modernVersion || msg.metaVersion() >= modernVersion
}

// originAllowed accepts requests without Origin (non-browser clients) and
// browser requests from the gateway's own origin.
func (g *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return u.Host == r.Host || slices.Contains(g.cfg.AllowedOrigins, origin)
}

// bindingWriter watches the response to an initialize request: when mcp-go
// assigns a session id, it is bound to the principal before the client
// can use it.
type bindingWriter struct {
	http.ResponseWriter
	g     *Server
	r     *http.Request
	p     Principal
	bound bool
}

func (bw *bindingWriter) WriteHeader(code int) {
	bw.bind()
	bw.ResponseWriter.WriteHeader(code)
}

func (bw *bindingWriter) Write(b []byte) (int, error) {
	bw.bind()
	return bw.ResponseWriter.Write(b)
}

func (bw *bindingWriter) Flush() {
	bw.bind()
	if f, ok := bw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (bw *bindingWriter) Unwrap() http.ResponseWriter { return bw.ResponseWriter }

func (bw *bindingWriter) bind() {
	if bw.bound {
		return
	}
	bw.bound = true
	id := bw.Header().Get(sessionHeader)
	if id == "" || bw.r.Header.Get(sessionHeader) != "" {
		return
	}
	bw.g.sessions.bind(id, bw.p.Digest())
	ev := &audit.Event{Kind: audit.KindSessionStart, Principal: bw.p.audit(), Session: id, Outcome: "ok"}
	if err := bw.g.audit.Append(context.WithoutCancel(bw.r.Context()), ev); err != nil {
		bw.g.log.Error("audit append failed", "kind", ev.Kind, "session_id", id, "error", err)
	}
}

// sessionIDFrom returns the legacy MCP session id of the request in ctx, or
// "" for a sessionless (2026-07-28) request.
func sessionIDFrom(ctx context.Context) string {
	if s := server.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}
