package mcpedge

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// notifier sends one tool call's notifications through mcp-go: progress
// when the client sent a progressToken, log messages when its log level
// admits info (mcp-go filters those). It implements mcpapi.Notifier.
type notifier struct {
	ctx   context.Context
	srv   *server.MCPServer
	token mcp.ProgressToken // nil: the client wants no progress
	// last is the progress last sent; Finish sends one more.
	last int
	// queued counts notifications handed to mcp-go; Finish waits for
	// them.
	queued int
}

// Bounds on waiting for mcp-go's notification queue (see Finish).
const (
	// notifyYield is how long drained first yields to the forwarder,
	// which the notification just queued made runnable, before it sleeps.
	notifyYield = 50 * time.Microsecond
	notifyPoll  = 200 * time.Microsecond
	notifyWait  = 5 * time.Second
)

func (n *notifier) Progress(progress, total int, message string) {
	if n.token == nil {
		return
	}
	n.last = progress
	params := map[string]any{"progressToken": n.token, "progress": progress, "message": message}
	if total > 0 {
		params["total"] = total
	}
	n.queue(func() error { return n.srv.SendNotificationToClient(n.ctx, "notifications/progress", params) })
}

func (n *notifier) Log(logger, text string) {
	n.queue(func() error {
		return n.srv.SendLogMessageToClient(n.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, logger, text))
	})
}

// queue hands one notification to mcp-go. Its per-session queue holds
// 100 and refuses more at once (server.ErrNotificationChannelBlocked), so
// a fast command on a slow connection would lose output: queue waits for
// room instead, which slows the call's output down to the client's pace.
func (n *notifier) queue(send func() error) {
	deadline := time.Now().Add(notifyWait)
	for {
		err := send()
		switch {
		case err == nil:
			// Possibly filtered by the client's log level rather than
			// queued; Finish then waits for nothing.
			n.queued++
			return
		case !errors.Is(err, server.ErrNotificationChannelBlocked) || time.Now().After(deadline):
			return
		}
		time.Sleep(notifyPoll)
	}
}

// pending is how many notifications wait in the session's mcp-go queue.
func (n *notifier) pending() int {
	if s := server.ClientSessionFromContext(n.ctx); s != nil {
		return len(s.NotificationChannel())
	}
	return 0
}

// Finish returns once every notification of the call has been written to
// the client, so that the result cannot overtake them. mcp-go (v1.2.1,
// server/streamable_http.go, handlePost) forwards a request's
// notifications from a goroutine that takes one off the session's queue
// and only then locks the response; when the tool handler returns in that
// window, the response path drains the rest of the queue, writes the
// result and marks the request done, and the forwarder then drops the
// notification it holds. So Finish first waits for the queue to empty,
// then queues a final notification and waits for that to be taken: the
// forwarder handles one at a time, so taking the last one means it has
// written everything before it. The final one is a completion (progress
// equal to total, with the status line, or a "sandgate" log record) that
// may itself be dropped by the same race, harmlessly.
// TestNotificationsPrecedeTheResult pins this.
func (n *notifier) Finish(status string) {
	if n.queued == 0 {
		return
	}
	n.drained()
	if n.token != nil {
		done := n.last + 1 // the end is the last step
		_ = n.srv.SendNotificationToClient(n.ctx, "notifications/progress", map[string]any{
			"progressToken": n.token, "progress": done, "total": done, "message": status,
		})
	} else {
		_ = n.srv.SendLogMessageToClient(n.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "sandgate", status))
	}
	n.drained()
}

// drained waits, bounded, until the session's notification queue is empty.
// The forwarder is a goroutine of this process that the queued
// notifications made runnable, so yielding to it usually empties the
// queue within microseconds; sleeping, 200 µs at a time and whatever the
// kernel adds to a sleep, is for a forwarder that a slow client holds up.
// A call whose client asked for progress slept twice, and its `echo`
// took 0.8 ms longer than one whose client did not; yielding first
// takes a third to a half of that off.
func (n *notifier) drained() {
	for until := time.Now().Add(notifyYield); time.Now().Before(until); runtime.Gosched() {
		if n.pending() == 0 {
			return
		}
	}
	for deadline := time.Now().Add(notifyWait); n.pending() > 0 && time.Now().Before(deadline); {
		time.Sleep(notifyPoll)
	}
}
