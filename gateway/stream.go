package gateway

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/runner/protocol"
)

// output collects a call's stdout and stderr as the runner streams them and
// forwards each chunk to the client while the call runs: as a progress
// notification when the client sent a progressToken, and as a log
// notification (logger "stdout"/"stderr") when its log level admits info.
//
// Memory is bounded by the runner's per-stream cap: bytes beyond it are
// never sent, only counted and flagged.
type output struct {
	limit  int // per-stream bytes kept; the runner is not trusted to cap
	ctx    context.Context
	srv    *server.MCPServer
	token  mcp.ProgressToken
	stdout strings.Builder
	stderr strings.Builder
	// over records a stream that went past limit here, which an honest
	// runner would have flagged itself.
	over [2]bool
	sent int
	// queued counts notifications handed to mcp-go for this call; settle
	// waits for them.
	queued int
	// pending holds a chunk's incomplete trailing UTF-8 sequence per
	// stream, so a character split across chunks is not mangled.
	pending [2][]byte
}

func newOutput(ctx context.Context, req mcp.CallToolRequest, limit int) *output {
	o := &output{ctx: ctx, srv: server.ServerFromContext(ctx), limit: limit}
	if req.Params.Meta != nil {
		o.token = req.Params.Meta.ProgressToken
	}
	return o
}

// event handles one non-terminal runner event.
func (o *output) event(ev protocol.Event) {
	var stream int
	switch ev.Type {
	case protocol.EventStdout:
		stream = 0
	case protocol.EventStderr:
		stream = 1
	default:
		return
	}
	buf := &o.stdout
	if stream == 1 {
		buf = &o.stderr
	}
	if buf.Len()+len(ev.Data) > o.limit {
		o.over[stream] = true
		return
	}
	text := o.decode(stream, ev.Data)
	if text == "" {
		return
	}
	buf.WriteString(text)
	o.notify(stream, text)
}

// decode turns a chunk into valid UTF-8, carrying an incomplete trailing
// sequence over to the next chunk; invalid bytes become U+FFFD.
func (o *output) decode(stream int, data []byte) string {
	buf := append(o.pending[stream], data...)
	o.pending[stream] = nil
	if n := incompleteTail(buf); n > 0 {
		o.pending[stream] = append([]byte(nil), buf[len(buf)-n:]...)
		buf = buf[:len(buf)-n]
	}
	return strings.ToValidUTF8(string(buf), "\uFFFD")
}

// incompleteTail returns how many trailing bytes of b start a UTF-8
// sequence that is not complete yet.
func incompleteTail(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

func (o *output) notify(stream int, text string) {
	if o.srv == nil {
		return
	}
	logger := "stdout"
	if stream == 1 {
		logger = "stderr"
	}
	o.sent += len(text)
	if o.token != nil {
		o.queue(func() error {
			return o.srv.SendNotificationToClient(o.ctx, "notifications/progress", map[string]any{
				"progressToken": o.token, "progress": o.sent, "message": text,
			})
		})
	}
	o.queue(func() error {
		return o.srv.SendLogMessageToClient(o.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, logger, text))
	})
}

// Bounds on waiting for mcp-go's notification queue (see settle).
const (
	// notifyYield is how long drained first yields to the forwarder,
	// which the notification just queued made runnable, before it sleeps.
	notifyYield = 50 * time.Microsecond
	notifyPoll  = 200 * time.Microsecond
	notifyWait  = 5 * time.Second
)

// queue hands one notification to mcp-go. Its per-session queue holds
// 100 and refuses more at once (server.ErrNotificationChannelBlocked), so
// a fast command on a slow connection would lose output: queue waits for
// room instead, which slows the call's output down to the client's pace.
func (o *output) queue(send func() error) {
	deadline := time.Now().Add(notifyWait)
	for {
		err := send()
		switch {
		case err == nil:
			// Possibly filtered by the client's log level rather than
			// queued; settle then waits for nothing.
			o.queued++
			return
		case !errors.Is(err, server.ErrNotificationChannelBlocked) || time.Now().After(deadline):
			return
		}
		time.Sleep(notifyPoll)
	}
}

// pendingNotifications is how many notifications wait in the session's
// mcp-go queue.
func (o *output) pendingNotifications() int {
	if s := server.ClientSessionFromContext(o.ctx); s != nil {
		return len(s.NotificationChannel())
	}
	return 0
}

// settle returns once every notification of the call has been written to
// the client, so that the result cannot overtake them. mcp-go (v1.2.1,
// server/streamable_http.go, handlePost) forwards a request's
// notifications from a goroutine that takes one off the session's queue
// and only then locks the response; when the tool handler returns in that
// window, the response path drains the rest of the queue, writes the
// result and marks the request done, and the forwarder then drops the
// notification it holds. So settle first waits for the queue to empty,
// then queues a final notification and waits for that to be taken: the
// forwarder handles one at a time, so taking the last one means it has
// written everything before it. The final one is a completion (progress
// equal to total, with the status line, or a "sandgate" log record) that
// may itself be dropped by the same race, harmlessly.
func (o *output) settle(status string) {
	if o.srv == nil || o.queued == 0 {
		return
	}
	o.drained()
	if o.token != nil {
		done := o.sent + 1 // the exit is the last step
		_ = o.srv.SendNotificationToClient(o.ctx, "notifications/progress", map[string]any{
			"progressToken": o.token, "progress": done, "total": done, "message": status,
		})
	} else {
		_ = o.srv.SendLogMessageToClient(o.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "sandgate", status))
	}
	o.drained()
}

// drained waits, bounded, until the session's notification queue is empty.
// The forwarder is a goroutine of this process that the queued
// notifications made runnable, so yielding to it usually empties the
// queue within microseconds; sleeping, 200 µs at a time and whatever the
// kernel adds to a sleep, is for a forwarder that a slow client holds up.
// A call whose client asked for progress slept twice, and its `echo`
// took 0.8 ms longer than one whose client did not; yielding first
// takes a third to a half of that off.
func (o *output) drained() {
	for until := time.Now().Add(notifyYield); time.Now().Before(until); runtime.Gosched() {
		if o.pendingNotifications() == 0 {
			return
		}
	}
	for deadline := time.Now().Add(notifyWait); o.pendingNotifications() > 0 && time.Now().Before(deadline); {
		time.Sleep(notifyPoll)
	}
}

// flush appends whatever incomplete sequences remain at the end.
func (o *output) flush() {
	for stream, rest := range o.pending {
		if len(rest) == 0 {
			continue
		}
		text := strings.ToValidUTF8(string(rest), "\uFFFD")
		if stream == 0 {
			o.stdout.WriteString(text)
		} else {
			o.stderr.WriteString(text)
		}
		o.pending[stream] = nil
	}
}
