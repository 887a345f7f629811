package e2b

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

func TestCellEvents(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG fake")
	for _, tt := range []struct {
		name string
		res  protocol.InterpResult
		want []string // one JSON line per event
	}{
		{"output lines keep their newlines", protocol.InterpResult{Stdout: "a\nb\n", Stderr: "warn"}, []string{
			`{"type":"stdout","text":"a\n"}`, `{"type":"stdout","text":"b\n"}`, `{"type":"stderr","text":"warn"}`,
			`{"type":"number_of_executions","execution_count":7}`}},
		{"figures and the main result", protocol.InterpResult{Figures: [][]byte{png}, Result: "3", HasResult: true}, []string{
			`{"type":"result","text":"\u003cFigure\u003e","png":"` + base64.StdEncoding.EncodeToString(png) + `","is_main_result":false}`,
			`{"type":"result","text":"3","is_main_result":true}`,
			`{"type":"number_of_executions","execution_count":7}`}},
		{"an error", protocol.InterpResult{ErrorName: "ValueError", Error: "Traceback (most recent call last):\n  File \"<cell>\", line 1\nValueError: bad: really\n"}, []string{
			`{"type":"error","name":"ValueError","value":"bad: really","traceback":"Traceback (most recent call last):\n  File \"\u003ccell\u003e\", line 1\nValueError: bad: really\n"}`,
			`{"type":"number_of_executions","execution_count":7}`}},
		{"an error without a message, and a note", protocol.InterpResult{ErrorName: "KeyboardInterrupt", Error: "Traceback ...\nKeyboardInterrupt", TimedOut: true, Message: "timed out"}, []string{
			`{"type":"stderr","text":"sandgate: timed out\n"}`,
			`{"type":"error","name":"KeyboardInterrupt","value":"","traceback":"Traceback ...\nKeyboardInterrupt"}`,
			`{"type":"number_of_executions","execution_count":7}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ev := range cellEvents(tt.res, 7) {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(b))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestExecCounterBounded(t *testing.T) {
	t.Parallel()
	var c execCounter
	for i := range maxExecCounts + 10 {
		c.next(strings.Repeat("s", i), "python", false)
	}
	if len(c.counts) > maxExecCounts {
		t.Fatalf("%d counts kept, want at most %d", len(c.counts), maxExecCounts)
	}
	if c.next("a", "python", false) != 1 || c.next("a", "python", false) != 2 || c.next("a", "python", true) != 1 {
		t.Fatal("counts do not start at 1, count up, and restart with the interpreter")
	}
}
