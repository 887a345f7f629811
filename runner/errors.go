package runner

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"github.com/sandgate/sandgate/runner/protocol"
)

// toProtocolError classifies an error a handler returned. Handlers return
// *protocol.Error for failures they understand; this catches the rest so
// the gateway never has to parse an error string.
func toProtocolError(err error) *protocol.Error {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, context.Canceled):
		return &protocol.Error{Code: protocol.CodeCanceled, Message: "canceled"}
	case errors.Is(err, fs.ErrNotExist):
		return &protocol.Error{Code: protocol.CodeNotFound, Message: err.Error()}
	case errors.Is(err, fs.ErrPermission):
		return &protocol.Error{Code: protocol.CodePermission, Message: err.Error()}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &protocol.Error{Code: protocol.CodeNoSpace, Message: err.Error() + "; the sandbox's disk quota is full: remove files or ask for a larger workspace"}
	}
	return &protocol.Error{Code: protocol.CodeInternal, Message: err.Error()}
}
