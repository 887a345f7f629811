package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sandgate/sandgate/runner/protocol"
)

// handler serves one operation. emit sends a non-terminal event for the
// request (the dispatcher fills in the id); the returned value becomes the
// terminal event's result, and a payloadResult's payload its payload.
type handler func(ctx context.Context, req protocol.Request, emit func(protocol.Event)) (any, error)

// payloadResult is a result whose bytes go beside its JSON (see
// protocol.WritePayload). Only operations whose request asked for it
// return one.
type payloadResult struct {
	result  any
	payload []byte
}

// registry maps operations to handlers. Registration is explicit and a
// duplicate panics, so a wiring mistake fails at start, not at call time.
type registry map[protocol.Op]handler

func (r registry) add(op protocol.Op, h handler) {
	if _, dup := r[op]; dup {
		panic(fmt.Sprintf("runner: handler for %q registered twice", op))
	}
	r[op] = h
}

// unary adapts a request/response function that streams nothing.
func unary[Req, Res any](fn func(context.Context, Req) (Res, error)) handler {
	return func(ctx context.Context, r protocol.Request, _ func(protocol.Event)) (any, error) {
		var req Req
		if err := decodeRequest(r, &req); err != nil {
			return nil, err
		}
		return fn(ctx, req)
	}
}

// streaming adapts a function that emits events while it runs.
func streaming[Req, Res any](fn func(context.Context, Req, func(protocol.Event)) (Res, error)) handler {
	return func(ctx context.Context, r protocol.Request, emit func(protocol.Event)) (any, error) {
		var req Req
		if err := decodeRequest(r, &req); err != nil {
			return nil, err
		}
		return fn(ctx, req, emit)
	}
}

// decodeRequest decodes the params of r, an operation that takes no
// payload.
func decodeRequest(r protocol.Request, into any) error {
	if r.Payload != nil {
		return protocol.Errorf(protocol.CodeInvalid, "%s takes no payload; send everything in the parameters", r.Op)
	}
	return decode(r.Params, into)
}

// decode parses params strictly: an unknown field is a gateway/runner
// mismatch worth reporting rather than silently ignoring.
func decode(params json.RawMessage, into any) error {
	if len(params) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytesReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return protocol.Errorf(protocol.CodeInvalid, "decode params: %v", err)
	}
	return nil
}
