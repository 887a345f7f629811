package mcpedge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/auth/resource"
	"github.com/sandgate/sandgate/gateway/audit"
)

// MaxBodyBytes bounds one MCP request body (and one message over
// WebSocket, gateway/mcpws). The largest legitimate body is
// a write_file of the 64 MiB cap, base64-encoded.
const MaxBodyBytes = 90 << 20

const sessionHeader = "Mcp-Session-Id"

// mcpMiddleware runs before mcp-go on every /mcp request, in this order:
// foreign origins and oversized bodies are refused; the bearer token is
// verified (401); the caller becomes a identity.Identity; a tools/call without the
// tool's scopes is refused (403, naming them, so a client can step up);
// and a session id is only usable by the principal that created it (anyone
// else gets the same 404 as for an unknown id). A GET, which has no body,
// takes the same origin, token and session checks on its way to the
// session's standalone stream (serveStandaloneStream), never to mcp-go.
func (e *Edge) Middleware(next http.Handler) http.Handler {
	inner := e.principalStage(next)
	var stream http.Handler = http.HandlerFunc(e.serveStandaloneStream)
	if e.cfg.Auth != nil {
		inner = e.cfg.Auth.Authenticate(inner)
		stream = e.cfg.Auth.Authenticate(stream)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.OriginAllowed(r) {
			http.Error(w, "Forbidden: foreign Origin "+r.Header.Get("Origin"), http.StatusForbidden)
			return
		}
		if r.Method == http.MethodGet {
			stream.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > MaxBodyBytes {
			http.Error(w, fmt.Sprintf("request body of %d bytes is above the %d byte limit", r.ContentLength, MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		// The server has no whole-request ReadTimeout (it would cancel
		// streaming calls), so the body alone gets a deadline: a client
		// trickling it cannot hold a connection slot for ever.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(e.cfg.BodyReadTimeout))
		msg, err := peekMessage(r)
		_ = rc.SetReadDeadline(time.Time{})
		if err != nil {
			writeBodyError(w, err, e.cfg.BodyReadTimeout)
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), messageKey{}, msg)))
	})
}

type messageKey struct{}

// MessageFrom returns the JSON-RPC message the edge read from the body
// of the request ctx belongs to, if it read one.
func MessageFrom(ctx context.Context) (Message, bool) {
	msg, ok := ctx.Value(messageKey{}).(Message)
	return msg, ok
}

// principalStage runs after authentication. It refuses JSON-RPC batches,
// which no MCP version this gateway speaks allows.
func (e *Edge) principalStage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, _ := r.Context().Value(messageKey{}).(Message)
		if msg.batch {
			writeBatchError(w)
			return
		}
		if msg.problem.code != 0 {
			writeRPCError(w, msg.ID, msg.problem.code, msg.problem.message)
			return
		}
		p := e.principal(r.Context())
		ctx := identity.With(r.Context(), p)
		if missing := e.missingScopes(p, msg); len(missing) > 0 {
			e.denyScope(ctx, w, p, msg)
			return
		}
		ctx, ok := e.sessionStage(ctx, w, r, p, msg)
		if !ok {
			return
		}
		defer e.releaseSession(ctx)
		if s := r.Header.Get(sessionHeader); s != "" {
			e.redeliver.begin(s)
			defer e.redeliver.end(s)
		}
		bulk := &bulkTexts{}
		r = r.WithContext(withBulkTexts(ctx, bulk))
		// A running call writes its notifications into the response
		// itself (notify.go).
		out := newResponseStream(&bindingWriter{ResponseWriter: w, e: e, r: r, p: p, bulk: bulk})
		defer out.close()
		next.ServeHTTP(out, r.WithContext(withResponseStream(r.Context(), out)))
	})
}

// principal maps the verified identity (or, with authentication off, the
// local principal) to the gateway's identity.Identity.
func (e *Edge) principal(ctx context.Context) identity.Identity {
	if e.cfg.Auth == nil {
		return e.cfg.Local
	}
	id, _ := resource.IdentityFrom(ctx)
	return id
}

// missingScopes returns the scopes a request needs that p lacks (see
// neededScopes). Listing tools, resources and prompts is open to any
// valid token so a client can learn what to ask for.
func (e *Edge) missingScopes(p identity.Identity, msg Message) []string {
	if e.cfg.Auth == nil {
		return nil
	}
	var missing []string
	for _, s := range e.cfg.NeededScopes(msg) {
		if !slices.Contains(p.Scopes, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// denyScope audits and answers a call refused for want of scopes. The
// challenge names every scope the call needs, not only the missing ones,
// so a client asking for exactly those gets a token that works.
func (e *Edge) denyScope(ctx context.Context, w http.ResponseWriter, p identity.Identity, msg Message) {
	need := e.cfg.NeededScopes(msg)
	tool := msg.Params.Name
	if msg.Method != "tools/call" {
		tool = msg.Method
	}
	ev := &audit.Event{Kind: audit.KindToolDenied, Principal: p, Tool: tool, Outcome: audit.OutcomeDenied,
		DenyReason: "insufficient scope: needs " + fmt.Sprint(need)}
	if err := e.audit.Append(context.WithoutCancel(ctx), ev); err != nil {
		e.log.Error("audit append failed", "kind", ev.Kind, "tool", ev.Tool, "error", err)
	}
	e.cfg.Auth.WriteInsufficientScope(w, need)
}

// sessionStage enforces session ownership for legacy requests and returns
// a context that ends when the session does. ok is false when it already
// answered.
func (e *Edge) sessionStage(ctx context.Context, w http.ResponseWriter, r *http.Request, p identity.Identity, msg Message) (context.Context, bool) {
	id := r.Header.Get(sessionHeader)
	modern := isModern(r, msg)
	switch {
	case id == "" && !modern && r.Method == http.MethodPost && msg.needsSession():
		http.Error(w, "Mcp-Session-Id header is required: send initialize first and pass the session id it returns (or use protocol 2026-07-28 with sandbox_create)", http.StatusBadRequest)
		return ctx, false
	case id == "" || modern:
		return ctx, true
	}
	if !e.sessions.ownedBy(id, p.Digest()) {
		msg := "Session not found; start a new session with initialize"
		if term, _ := e.sessions.Validate(id); term {
			msg = "Session terminated; start a new session with initialize"
		} else if e.cfg.Replicated {
			msg = errOtherReplica
		}
		http.Error(w, msg, http.StatusNotFound)
		return ctx, false
	}
	e.sessions.touch(id)
	// Every request of a session, including a long-lived GET stream, ends
	// when the session does (DELETE, idle, lifetime).
	ctx, cancel := context.WithCancel(ctx)
	ctx = context.WithValue(ctx, cancelKey{}, cancel)
	if done := e.sessions.doneFor(id); done != nil {
		go func() {
			select {
			case <-done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, true
}

// errOtherReplica answers a legacy session id a replicated gateway does
// not know. Legacy sessions live in the memory of the replica that
// started them; this replica cannot tell another replica's session from
// an unknown one (or another principal's, which must look the same), so
// it says both. The status stays 404, on which clients start a new
// session, as the MCP spec says.
const errOtherReplica = "Session not found on this gateway replica: it may belong to another replica (legacy MCP sessions live on the replica that started them; route requests by the Mcp-Session-Id header, i.e. sticky sessions), or it ended. Start a new session with initialize, or use protocol 2026-07-28 with sandbox_create, which works on any replica"

type cancelKey struct{}

// releaseSession ends the session-scoped context of a finished request.
func (e *Edge) releaseSession(ctx context.Context) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

// isModern reports whether r declares protocol 2026-07-28 or later, in
// its header or its body's _meta, as mcp-go decides it: such requests have
// no session, and the session header is ignored.
func isModern(r *http.Request, msg Message) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= modernVersion || msg.metaVersion() >= modernVersion
}

// OriginAllowed accepts requests without Origin (non-browser clients) and
// browser requests from the gateway's own origin.
func (e *Edge) OriginAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return u.Host == r.Host || slices.Contains(e.cfg.AllowedOrigins, origin)
}

// sessionIDFrom returns the legacy MCP session id of the request in ctx, or
// "" for a sessionless (2026-07-28) request.
func SessionFrom(ctx context.Context) string {
	if s := server.ClientSessionFromContext(ctx); s != nil {
		return s.SessionID()
	}
	return ""
}
