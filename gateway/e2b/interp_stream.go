package e2b

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/sandgate/sandgate/runner/protocol"
)

// cellStream writes an /execute answer: newline-delimited JSON events,
// each flushed as soon as it is written, so that the client sees a
// cell's output as the cell prints it. The status line goes out with the
// first event, so that a call refused before anything ran still answers
// with its own status. Its methods are called from the handler's
// goroutine only (the runner client calls onEvent in the caller's).
type cellStream struct {
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
	gone    bool // a write failed: the client went away

	// tails hold the start of a character a chunk of output ended in the
	// middle of, until the next chunk of the same stream completes it.
	tails map[eventType][]byte
}

func newCellStream(w http.ResponseWriter) *cellStream {
	return &cellStream{w: w, enc: json.NewEncoder(w), tails: map[eventType][]byte{}}
}

// send writes evs and flushes them.
func (s *cellStream) send(evs ...any) {
	if s.gone || len(evs) == 0 {
		return
	}
	if !s.started {
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	for _, ev := range evs {
		if err := s.enc.Encode(ev); err != nil {
			s.gone = true
			return
		}
	}
	if err := http.NewResponseController(s.w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.gone = true
	}
}

// output is the runner's event handler for a streamed cell: each chunk
// of stdout or stderr goes out at once, a line per event.
func (s *cellStream) output(ev protocol.Event) {
	var typ eventType
	switch ev.Type {
	case protocol.EventStdout:
		typ = eventStdout
	case protocol.EventStderr:
		typ = eventStderr
	default:
		return
	}
	text, tail := completeUTF8(append(s.tails[typ], ev.Data...))
	s.tails[typ] = tail
	s.send(outputEvents(typ, string(text), time.Now())...)
}

// flushTails sends what is left of a cut character, as it is: the cell
// has ended and nothing will complete it.
func (s *cellStream) flushTails() {
	for _, typ := range []eventType{eventStdout, eventStderr} {
		if tail := s.tails[typ]; len(tail) > 0 {
			s.send(outputEvents(typ, string(tail), time.Now())...)
		}
	}
	clear(s.tails)
}

// completeUTF8 splits b before a last character that is cut short (at
// most utf8.UTFMax-1 bytes), so that no event splits a character in two.
func completeUTF8(b []byte) (complete, tail []byte) {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i], b[i:]
			}
			break
		}
	}
	return b, nil
}
