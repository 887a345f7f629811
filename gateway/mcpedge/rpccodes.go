package mcpedge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// mcp-go (v1.2.1) answers every error a resource or prompt handler
// returns as -32603 (internal error). A resource the caller cannot have
// (an error wrapping mcpapi.ErrResourceNotFound) is the spec's
// resource-not-found error instead: -32002 before 2026-07-28, -32602
// from it. The edge marks the request (markNotFound) and rpcCodes puts
// the right code in the response as it is written.
//
// The spec also says that error SHOULD name the URI asked for in its
// data ({"uri": ...}), which mcp-go gives neither our errors nor its own
// (for a URI no resource or template matches). For a request about one
// resource, rpcCodes adds it to whichever of the two the response
// carries.

// errCode is one request's replacement for the -32603 of its error.
type errCode struct{ code atomic.Int64 }

// resourceMethods are the requests about one resource, named by
// params.uri, whose not-found error names it.
var resourceMethods = map[string]bool{"resources/read": true, "resources/subscribe": true, "resources/unsubscribe": true}

// notFoundCodes are the resource-not-found codes of both eras, as mcp-go
// writes them for a URI it has no handler for.
var notFoundCodes = [][]byte{[]byte(`"code":` + strconv.Itoa(mcp.RESOURCE_NOT_FOUND)), []byte(`"code":` + strconv.Itoa(mcp.INVALID_PARAMS))}

type errCodeKey struct{}

// markNotFound marks ctx's request as answering resource-not-found when
// err says so, and returns err.
func markNotFound(ctx context.Context, err error) error {
	if !errors.Is(err, mcpapi.ErrResourceNotFound) {
		return err
	}
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
// (see markNotFound).
func rpcCodes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ec := &errCode{}
		r = r.WithContext(context.WithValue(r.Context(), errCodeKey{}, ec))
		cw := &codeWriter{ResponseWriter: w, ec: ec}
		if msg, _ := MessageFrom(r.Context()); resourceMethods[msg.Method] && msg.Params.URI != "" {
			cw.data, _ = json.Marshal(map[string]string{"uri": msg.Params.URI})
		}
		next.ServeHTTP(cw, r)
	})
}

// codeWriter replaces the first error code of replacedCodes written
// after a handler chose another code and, for a request about one
// resource, puts the resource-not-found error's data after its code
// (mcp-go gives these errors no data of their own). mcp-go writes each
// JSON-RPC message with one Write (see bulktext.go), so the change stays
// within one message. A code in the message text cannot match: inside a
// JSON string its quotes are escaped.
type codeWriter struct {
	http.ResponseWriter
	ec   *errCode
	data []byte // {"uri": ...} of a request about one resource, or nil
	done bool
}

// replacedCodes are the codes mcp-go gives a handler's error (-32603)
// and a request-initialization hook's (-32600, see checkSubscribe).
var replacedCodes = [][]byte{[]byte(`"code":` + strconv.Itoa(mcp.INTERNAL_ERROR)), []byte(`"code":` + strconv.Itoa(mcp.INVALID_REQUEST))}

// Write reports len(b) written when the whole, perhaps longer,
// replacement was: the caller wrote b.
func (cw *codeWriter) Write(b []byte) (int, error) {
	if cw.done {
		return cw.ResponseWriter.Write(b)
	}
	// A handler's error gets the code it chose; without one, only
	// mcp-go's own not-found error, which keeps its code, gets the data.
	code := cw.ec.code.Load()
	olds := replacedCodes
	if code == 0 {
		if cw.data == nil {
			return cw.ResponseWriter.Write(b)
		}
		olds = notFoundCodes
	}
	for _, old := range olds {
		i := bytes.Index(b, old)
		if i < 0 {
			continue
		}
		cw.done = true
		repl := old
		if code != 0 {
			repl = []byte(`"code":` + strconv.FormatInt(code, 10))
		}
		if cw.data != nil {
			repl = slices.Concat(repl, []byte(`,"data":`), cw.data)
		}
		if _, err := cw.ResponseWriter.Write(slices.Concat(b[:i], repl, b[i+len(old):])); err != nil {
			return 0, err
		}
		return len(b), nil
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
