package e2b

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// eventType names an /execute output line, as the SDKs' parseOutput
// switch on it; they ignore types they do not know. The last line is
// always end_of_execution, as E2B's code interpreter ends its answers.
type eventType string

const (
	eventStdout     eventType = "stdout"
	eventStderr     eventType = "stderr"
	eventResult     eventType = "result"
	eventError      eventType = "error"
	eventExecutions eventType = "number_of_executions"
	eventEnd        eventType = "end_of_execution"
)

// timestampLayout writes an output event's time as E2B's code
// interpreter does (the Jupyter message's date, ISO 8601 in UTC with
// microseconds). Its Python SDK reads the field without parsing it and
// hands it to on_stdout and on_stderr; its JS SDK stamps its own.
const timestampLayout = "2006-01-02T15:04:05.000000-07:00"

// streamEvent is a piece of stdout or stderr; the SDKs keep each as one
// entry of logs.stdout or logs.stderr. The Python SDK reads text and
// timestamp of every one (a missing key is its KeyError).
type streamEvent struct {
	Type      eventType `json:"type"`
	Text      string    `json:"text"`
	Timestamp string    `json:"timestamp"`
}

// outputEvents is a piece of output as events, one line per event with
// its newline; a last line without one is kept as it is.
func outputEvents(typ eventType, text string, at time.Time) []any {
	stamp := at.UTC().Format(timestampLayout)
	var evs []any
	for line := range strings.Lines(text) {
		evs = append(evs, streamEvent{Type: typ, Text: line, Timestamp: stamp})
	}
	return evs
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

// execEndEvent ends every answer.
type execEndEvent struct {
	Type eventType `json:"type"`
}

// figureText is a figure's text form, as Jupyter shows a matplotlib one.
const figureText = "<Figure>"

// cellEvents turns a cell's outcome into the events E2B's code
// interpreter would send after its output, in the order the SDK shows
// them, stamped at. Output still in res (a runner that cannot stream
// answers it there) comes first; the runner's note on an abnormal end
// (the interpreter died or was restarted, output was cut) is a last
// stderr line, so that a caller learns its state is gone.
func cellEvents(res protocol.InterpResult, count int, at time.Time) []any {
	evs := outputEvents(eventStdout, res.Stdout, at)
	evs = append(evs, outputEvents(eventStderr, res.Stderr, at)...)
	if res.Message != "" {
		evs = append(evs, outputEvents(eventStderr, "sandgate: "+res.Message+"\n", at)...)
	}
	for _, png := range res.Figures {
		evs = append(evs, resultEvent{Type: eventResult, Text: figureText, PNG: base64.StdEncoding.EncodeToString(png)})
	}
	if res.HasResult {
		evs = append(evs, resultEvent{Type: eventResult, Text: resultText(res.Result), IsMainResult: true})
	}
	if res.ErrorName != "" || res.Error != "" {
		evs = append(evs, errorEvent{Type: eventError, Name: res.ErrorName, Value: errorValue(res.ErrorName, res.Error), Traceback: res.Error})
	}
	return append(evs, countEvent{Type: eventExecutions, ExecutionCount: count}, execEndEvent{Type: eventEnd})
}

// resultText is a result's text as E2B's code interpreter reports it:
// a repr in matching quotes loses them (the string 'done' is done), as
// its server strips them from text/plain; anything else is unchanged.
func resultText(repr string) string {
	if len(repr) >= 2 && (repr[0] == '\'' || repr[0] == '"') && repr[len(repr)-1] == repr[0] {
		return repr[1 : len(repr)-1]
	}
	return repr
}

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
