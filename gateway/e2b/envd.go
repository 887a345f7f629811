package e2b

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem/filesystemconnect"
	"github.com/sandgate/sandgate/gateway/e2b/envd/process/processconnect"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// envdMaxRequestBytes bounds one decoded request message. The largest is
// SendInput's stdin chunk; the SDKs send what the caller passes at once,
// and nothing a client sends here should make the gateway hold more.
const envdMaxRequestBytes = 16 << 20

// headerKeepalive is the client's keepalive interval in seconds for
// server streams (the SDKs send 50): a stream sends a KeepAlive event
// when nothing else went out for that long, so that proxies on the way
// do not close an idle stream.
const headerKeepalive = "Keepalive-Ping-Interval"

// defaultKeepalive applies when a client sends no interval; a client's
// own choice is kept between minKeepalive and maxKeepalive.
const (
	defaultKeepalive = 30 * time.Second
	minKeepalive     = time.Second
	maxKeepalive     = 10 * time.Minute
)

// envdRoutes serves the envd process and filesystem services over the
// Connect protocol (JSON or binary, unary and server streaming over
// HTTP/1.1, as the SDKs' connect-web transport speaks it).
func (a *API) envdRoutes(mux *http.ServeMux) {
	opts := []connect.HandlerOption{connect.WithReadMaxBytes(envdMaxRequestBytes)}
	mux.Handle(processconnect.NewProcessHandler(&processService{a: a}, opts...))
	mux.Handle(filesystemconnect.NewFilesystemHandler(&filesystemService{a: a, watchers: newWatcherSet()}, opts...))
}

// do resolves the request's sandbox from its headers and runs fn as one
// audited call of it; every error comes back as a *connect.Error.
func (a *API) do(ctx context.Context, h http.Header, op Op, fn func(ctx context.Context, c *protocol.Client) error) error {
	r, err := a.open(ctx, h, op.Name)
	if err != nil {
		return connectError(err)
	}
	return connectError(r.Do(ctx, op, fn))
}

// keepaliveInterval reads the client's keepalive interval from h.
func keepaliveInterval(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get(headerKeepalive))
	if err != nil || s <= 0 {
		return defaultKeepalive
	}
	// Clamped as a count first: a large one would overflow the Duration.
	return time.Duration(min(s, int(maxKeepalive/time.Second))) * time.Second
}

// connectError gives err the Connect code the SDKs act on (NotFound
// makes kill and exists answer false, AlreadyExists makes makeDir answer
// false), keeping its text, which tells the user what to do.
func connectError(err error) error {
	var ce *connect.Error
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return connect.NewError(connectCode(err), err)
}

// connectCode maps the gateway's error categories, then the runner's
// protocol codes.
func connectCode(err error) connect.Code {
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return connect.CodeNotFound
	case errors.Is(err, ErrForbidden):
		return connect.CodePermissionDenied
	case errors.Is(err, ErrInvalid):
		return connect.CodeInvalidArgument
	case errors.Is(err, ErrQuota):
		return connect.CodeResourceExhausted
	case errors.Is(err, ErrUnsupported):
		return connect.CodeUnimplemented
	case errors.Is(err, ErrPaused):
		return connect.CodeFailedPrecondition
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled
	}
	if c, ok := protocolCodes[protocol.CodeOf(err)]; ok {
		return c
	}
	return connect.CodeInternal
}

// protocolCodes maps every runner error code. Unavailable covers a
// runner that is gone or stopped: the SDKs then report the sandbox as
// no longer running.
var protocolCodes = map[protocol.Code]connect.Code{
	protocol.CodeInvalid:      connect.CodeInvalidArgument,
	protocol.CodeNotFound:     connect.CodeNotFound,
	protocol.CodeExists:       connect.CodeAlreadyExists,
	protocol.CodePermission:   connect.CodePermissionDenied,
	protocol.CodeTooLarge:     connect.CodeResourceExhausted,
	protocol.CodeNotUnique:    connect.CodeFailedPrecondition,
	protocol.CodeNoMatch:      connect.CodeFailedPrecondition,
	protocol.CodeIsDir:        connect.CodeInvalidArgument,
	protocol.CodeNotDir:       connect.CodeInvalidArgument,
	protocol.CodeNoSpace:      connect.CodeResourceExhausted,
	protocol.CodeCanceled:     connect.CodeCanceled,
	protocol.CodeUnsupported:  connect.CodeUnimplemented,
	protocol.CodeNetwork:      connect.CodeUnavailable,
	protocol.CodeUnavailable:  connect.CodeUnavailable,
	protocol.CodeUnresponsive: connect.CodeUnavailable,
	protocol.CodeInternal:     connect.CodeInternal,
}

// unimplemented answers a feature Sandgate does not offer, saying what
// to do instead.
func unimplemented(msg string) error {
	return connect.NewError(connect.CodeUnimplemented, errors.New(msg))
}

// invalidArgument answers a request the client must change.
func invalidArgument(msg string) error {
	return connect.NewError(connect.CodeInvalidArgument, errors.New(msg))
}
