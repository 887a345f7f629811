package e2b

import (
	"encoding/json"
	"net/http"

	"github.com/sandgate/sandgate/runner/protocol"
)

// dataStatus maps an error from a Backend, a Runner or the runner protocol
// to the status E2B's SDKs understand. The HTTP data plane (/files, the
// code interpreter) decides it here, once.
//
// Choices the SDKs see: a full disk is 507, which the e2b SDK turns into
// NotEnoughSpaceError as envd's own /files does; a lost runner is 502,
// which the SDKs read as "the sandbox is gone or timed out" and which
// makes their health probe report the sandbox not running.
func dataStatus(err error) int {
	if s := httpStatus(err); s != http.StatusInternalServerError {
		return s
	}
	switch protocol.CodeOf(err) {
	case protocol.CodeNotFound:
		return http.StatusNotFound
	case protocol.CodeInvalid, protocol.CodeIsDir, protocol.CodeNotDir, protocol.CodeExists,
		protocol.CodeNotUnique, protocol.CodeNoMatch:
		return http.StatusBadRequest
	case protocol.CodePermission:
		return http.StatusForbidden
	case protocol.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case protocol.CodeNoSpace:
		return http.StatusInsufficientStorage
	case protocol.CodeUnsupported:
		return http.StatusNotImplemented
	case protocol.CodeUnavailable, protocol.CodeUnresponsive:
		return http.StatusBadGateway
	case protocol.CodeCanceled:
		// The client went away (or the gateway is stopping); nobody
		// reads this status, but the log and audit should not call it
		// the server's fault.
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// apiError is the error body envd answers with, which the e2b SDK
// reads the message of.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// replyError answers err as envd would: its status and a JSON body whose
// message is the error's text, which tells the user what to do.
func replyError(w http.ResponseWriter, err error) {
	replyErrorStatus(w, dataStatus(err), err.Error())
}

// replyErrorStatus answers status with message in envd's error shape.
func replyErrorStatus(w http.ResponseWriter, status int, message string) {
	replyJSON(w, status, apiError{Code: status, Message: message})
}

// replyJSON answers v as JSON with status.
func replyJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
