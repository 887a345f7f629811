package tools

import (
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/gateway/mcpapi"
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
	limit  int             // per-stream bytes kept; the runner is not trusted to cap
	notify mcpapi.Notifier // nil: nobody to notify
	stdout strings.Builder
	stderr strings.Builder
	// over records a stream that went past limit here, which an honest
	// runner would have flagged itself.
	over [2]bool
	// sent counts the bytes (or, for a notebook, the cells) reported as
	// progress so far.
	sent int
	// pending holds a chunk's incomplete trailing UTF-8 sequence per
	// stream, so a character split across chunks is not mangled.
	pending [2][]byte
}

func newOutput(req mcpapi.CallToolRequest, limit int) *output {
	return &output{notify: req.Notifier, limit: limit}
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
	o.forward(stream, text)
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

// forward sends one decoded chunk to the client while the call runs.
func (o *output) forward(stream int, text string) {
	o.sent += len(text)
	if o.notify == nil {
		return
	}
	logger := "stdout"
	if stream == 1 {
		logger = "stderr"
	}
	o.notify.Progress(o.sent, 0, text)
	o.notify.Log(logger, text)
}

// settle sends status as the call's last notification and returns once
// every notification of the call has been written to the client, so
// that the result cannot overtake them (see mcpapi.Notifier.Finish).
func (o *output) settle(status string) {
	if o.notify != nil {
		o.notify.Finish(status)
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
