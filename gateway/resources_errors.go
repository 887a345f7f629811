package gateway

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcp-go (v1.2.1) answers every error a resource or prompt handler
// returns as -32603 (internal error). A resource the caller cannot have
// is the spec's resource-not-found error instead: -32002 before
// 2026-07-28, -32602 from it. The handler marks the request (notFound)
// and rpcCodes puts the right code in the response as it is written.

// errCode is one request's replacement for the -32603 of its error.
type errCode struct{ code atomic.Int64 }

type errCodeKey struct{}

// notFound marks ctx's request as answering resource-not-found and
// returns err.
func notFound(ctx context.Context, err error) error {
	if ec, ok := ctx.Value(errCodeKey{}).(*errCode); ok {
		code := mcp.RESOURCE_NOT_FOUND
		if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
			code = mcp.INVALID_PARAMS
		}
		ec.code.Store(int64(code))
	}
	return err
}

// rpcCodes wraps next so that handlers may choose their error's code
// (see notFound).
func (g *Server) rpcCodes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ec := &errCode{}
		r = r.WithContext(context.WithValue(r.Context(), errCodeKey{}, ec))
		next.ServeHTTP(&codeWriter{ResponseWriter: w, ec: ec}, r)
	})
}

// codeWriter replaces the first error code of replacedCodes written
// after a handler chose another code. mcp-go writes each JSON-RPC message with one Write
// (see bulktext.go), and the replacement has the same length, so a
// message is never split or resized. A code in the message text cannot
// match: inside a JSON string its quotes are escaped.
type codeWriter struct {
	http.ResponseWriter
	ec   *errCode
	done bool
}

// replacedCodes are the codes mcp-go gives a handler's error (-32603)
// and a request-initialization hook's (-32600, see checkSubscribe).
var replacedCodes = [][]byte{[]byte(`"code":` + strconv.Itoa(mcp.INTERNAL_ERROR)), []byte(`"code":` + strconv.Itoa(mcp.INVALID_REQUEST))}

func (cw *codeWriter) Write(b []byte) (int, error) {
	if code := cw.ec.code.Load(); code != 0 && !cw.done {
		for _, old := range replacedCodes {
			if bytes.Contains(b, old) {
				cw.done = true
				b = bytes.Replace(b, old, []byte(`"code":`+strconv.FormatInt(code, 10)), 1)
				break
			}
		}
	}
	return cw.ResponseWriter.Write(b)
}

func (cw *codeWriter) Flush() {
	if f, ok := cw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (cw *codeWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }
