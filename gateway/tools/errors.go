package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// errorResult maps an error to the isError result a user sees. This is the
// one place where error categories become words.
func (c *call) errorResult(err error) *mcpapi.CallToolResult {
	var pe *protocol.Error
	msg := err.Error()
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		msg = "sandbox not found: it does not exist, was destroyed, or belongs to someone else. Omit sandbox_id to use your session's sandbox, or call sandbox_create."
	case errors.Is(err, sandbox.ErrUnavailable):
		msg = "the sandbox backend is unavailable (" + msg + "); try again shortly or ask the operator to check the Docker engine or Kubernetes API server"
	case errors.Is(err, context.DeadlineExceeded):
		msg = "the call ran out of time: " + msg
	case errors.As(err, &pe) && pe.Code == protocol.CodeUnresponsive:
		msg = fmt.Sprintf("the sandbox stopped answering (%s); its next call replaces it with a new container%s", pe.Message, c.g.boxes.ReplacementKeeps())
	case errors.As(err, &pe) && pe.Code == protocol.CodeUnavailable:
		msg = fmt.Sprintf("lost the connection to the sandbox (%s); if the sandbox died, its next call replaces it with a new container%s", pe.Message, c.g.boxes.ReplacementKeeps())
	}
	if c.end.Outcome == "" {
		c.end.Outcome = "error"
	}
	c.end.Error = audit.Clip(msg, 500)
	return mcpapi.NewToolResultError(msg)
}

func isNotFound(err error) bool { return errors.Is(err, sandbox.ErrNotFound) }
