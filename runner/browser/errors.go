package browser

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandgate/sandgate/runner/protocol"
)

// invalidf reports a request the caller must change.
func invalidf(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalid, format, args...)
}

// notFoundf reports a ref, element or tab that does not exist (any more).
func notFoundf(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeNotFound, format, args...)
}

// failf reports an action the page or the browser could not complete.
func failf(format string, args ...any) *protocol.Error {
	return protocol.Errorf(protocol.CodeInternal, format, args...)
}

// wrapf adds what was being done to err, keeping its code. Context
// errors stay as they are, for Manager.explain to recognise.
func wrapf(err error, format string, args ...any) error {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return &protocol.Error{Code: protocol.CodeOf(err), Message: fmt.Sprintf(format, args...) + ": " + err.Error()}
}
