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
		p := LocalPrincipal
		r = r.WithContext(WithPrincipal(r.Context(), p))

		if id := r.Header.Get(sessionHeader); id != "" && !isModern(r) {
			if !g.sessions.ownedBy(id, p.Digest()) {
				if term, _ := g.sessions.Validate(id); term {
					http.Error(w, "Session terminated; start a new session with initialize", http.StatusNotFound)
					return
				}
				http.Error(w, "Session not found; start a new session with initialize", http.StatusNotFound)
				return
			}
			g.sessions.touch(id)
		}
		next.ServeHTTP(&bindingWriter{ResponseWriter: w, g: g, r: r, p: p}, r)
	})
}

// isModern reports whether r declares protocol 2026-07-28 or later, where
// the session header is ignored by mcp-go and must be by us too.
func isModern(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v >= "2026-07-28"
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
