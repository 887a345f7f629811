package audit

import (
	"errors"
	"fmt"
)

// Error categories; test with errors.Is.
var (
	// ErrUnavailable: the log cannot be written (disk full, read-only file
	// system, I/O error, file locked by another process, sink closed). The
	// event was not recorded, and the gateway must refuse the action it
	// was about to audit.
	ErrUnavailable = errors.New("audit log unavailable")
	// ErrClosed: Append or Query after Close. It wraps ErrUnavailable.
	ErrClosed = fmt.Errorf("%w: sink closed", ErrUnavailable)
	// ErrInvalid: the caller's event or query is malformed (unknown kind
	// or outcome, record too large, missing principal). Nothing was written.
	ErrInvalid = errors.New("invalid audit event")
	// ErrCorrupt: the existing log does not end in a verifiable record, or
	// a record cannot be decoded. The message says which file and line;
	// run `gateway audit verify FILE` and move the file aside.
	ErrCorrupt = errors.New("audit log corrupt")
)
