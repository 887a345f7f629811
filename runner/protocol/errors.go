package protocol

import (
	"errors"
	"fmt"
)

// Code classifies an Error so the gateway can map it to a message without
// parsing text.
type Code string

// Error codes.
const (
	CodeInvalid     Code = "invalid"      // bad parameters; the message says which
	CodeNotFound    Code = "not_found"    // file, directory or process does not exist
	CodeExists      Code = "exists"       // target already exists
	CodePermission  Code = "permission"   // the sandbox user may not do this
	CodeTooLarge    Code = "too_large"    // above a size cap; the message names the cap
	CodeNotUnique   Code = "not_unique"   // edit: old_string occurs more than once
	CodeNoMatch     Code = "no_match"     // edit: old_string does not occur
	CodeIsDir       Code = "is_directory" // a file was expected
	CodeNotDir      Code = "not_directory"
	CodeNoSpace     Code = "no_space" // disk or tmpfs quota reached
	CodeCanceled    Code = "canceled"
	CodeUnsupported Code = "unsupported" // unknown op, or a language the image lacks
	CodeNetwork     Code = "network"     // a network request failed: refused by the egress policy, unreachable, timed out
	CodeUnavailable Code = "unavailable" // the runner is shutting down or the connection broke
	// CodeUnresponsive: the runner stopped answering (a missed heartbeat
	// or handshake deadline); the gateway replaces the sandbox.
	CodeUnresponsive Code = "unresponsive"
	CodeInternal     Code = "internal"
)

// Error is the error carried by a terminal event. It implements error so
// runner packages can return it directly and the client can hand it back
// to the gateway unchanged.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf reports the Code of err: the code of the first *Error in its chain,
// or CodeInternal when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
