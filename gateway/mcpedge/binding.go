package mcpedge

import (
	"context"
	"net/http"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
)

// bindingWriter watches the response to an initialize request: when mcp-go
// assigns a session id, it is bound to the principal before the client
// can use it. It also writes a result's large texts in place of their
// placeholders (see bulktext.go).
type bindingWriter struct {
	http.ResponseWriter
	e     *Edge
	r     *http.Request
	p     identity.Identity
	bound bool
	bulk  *bulkTexts // the request's large texts, written in place of their placeholders
}

func (bw *bindingWriter) WriteHeader(code int) {
	bw.bind()
	bw.ResponseWriter.WriteHeader(code)
}

func (bw *bindingWriter) Write(b []byte) (int, error) {
	bw.bind()
	if s := bw.r.Header.Get(sessionHeader); s != "" {
		if bw.e.listeners.swallow(s, b) {
			return len(b), nil // the session's standalone stream carried it
		}
		bw.e.redeliver.written(s, b)
	}
	if bw.bulk != nil && bw.bulk.pending() {
		return bw.bulk.writeSpliced(bw.ResponseWriter, b)
	}
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
	bw.e.sessions.bind(id, bw.p.Digest())
	ev := &audit.Event{Kind: audit.KindSessionStart, Principal: bw.p, Session: id, Outcome: "ok"}
	if err := bw.e.audit.Append(context.WithoutCancel(bw.r.Context()), ev); err != nil {
		bw.e.log.Error("audit append failed", "kind", ev.Kind, "session_id", id, "error", err)
	}
}
