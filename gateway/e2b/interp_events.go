package e2b

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// eventType names an /execute output line, as the SDK's parseOutput
// switches on it; it ignores types it does not know and needs no end
// marker (the body's end is the execution's).
type eventType string

const (
	eventStdout     eventType = "stdout"
	eventStderr     eventType = "stderr"
	eventResult     eventType = "result"
	eventError      eventType = "error"
	eventExecutions eventType = "number_of_executions"
)

// streamEvent is a piece of stdout or stderr; the SDK keeps each as one
// entry of logs.stdout or logs.stderr.
type streamEvent struct {
	Type eventType `json:"type"`
	Text string    `json:"text"`
}

// resultEvent is a displayed value: a figure (png) or the cell's last
// expression (the main result, text only).
type resultEvent struct {
	Type         eventType `json:"type"`
	Text         string    `json:"text"`
	PNG          string    `json:"png,omitempty"`
	IsMainResult bool      `json:"is_main_result"`
}

// errorEvent is the exception that ended the cell.
type errorEvent struct {
	Type      eventType `json:"type"`
	Name      string    `json:"name"`
	Value     string    `json:"value"`
	Traceback string    `json:"traceback"`
}

// countEvent is the interpreter's execution count after the cell.
type countEvent struct {
	Type           eventType `json:"type"`
	ExecutionCount int       `json:"execution_count"`
}

// figureText is a figure's text form, as Jupyter shows a matplotlib one.
const figureText = "<Figure>"

// cellEvents turns a cell's outcome into the events E2B's code
// interpreter would send, in the order the SDK shows them. Output comes
// one line per event with its newline, as a notebook prints it;
// the runner's note on an abnormal end (the interpreter died or was
// restarted, output was cut) is a last stderr line, so that a caller
// learns its state is gone.
func cellEvents(res protocol.InterpResult, count int) []any {
	var evs []any
	for _, line := range lines(res.Stdout) {
		evs = append(evs, streamEvent{Type: eventStdout, Text: line})
	}
	for _, line := range lines(res.Stderr) {
		evs = append(evs, streamEvent{Type: eventStderr, Text: line})
	}
	if res.Message != "" {
		evs = append(evs, streamEvent{Type: eventStderr, Text: "sandgate: " + res.Message + "\n"})
	}
	for _, png := range res.Figures {
		evs = append(evs, resultEvent{Type: eventResult, Text: figureText, PNG: base64.StdEncoding.EncodeToString(png)})
	}
	if res.HasResult {
		evs = append(evs, resultEvent{Type: eventResult, Text: res.Result, IsMainResult: true})
	}
	if res.ErrorName != "" || res.Error != "" {
		evs = append(evs, errorEvent{Type: eventError, Name: res.ErrorName, Value: errorValue(res.ErrorName, res.Error), Traceback: res.Error})
	}
	return append(evs, countEvent{Type: eventExecutions, ExecutionCount: count})
}

// lines splits s after each newline, keeping it; a last line without one
// is kept as it is.
func lines(s string) []string { return slices.Collect(strings.Lines(s)) }

// errorValue is an exception's message, as Jupyter's evalue: the
// traceback's last line is "Name: value" (or "Name" alone when it has
// none).
func errorValue(name, traceback string) string {
	last := strings.TrimRight(traceback, "\n")
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	if v, ok := strings.CutPrefix(last, name+": "); ok {
		return v
	}
	if last == name {
		return ""
	}
	return last
}
