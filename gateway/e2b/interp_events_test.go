package e2b

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

func TestCellEvents(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG fake")
	at := time.Date(2026, 11, 28, 16, 5, 7, 123456789, time.FixedZone("CET", 3600))
	const stamp = `"timestamp":"2026-11-28T15:05:07.123456+00:00"`
	const end = `{"type":"end_of_execution"}`
	for _, tt := range []struct {
		name string
		res  protocol.InterpResult
		want []string // one JSON line per event
	}{
		{"output lines keep their newlines", protocol.InterpResult{Stdout: "a\nb\n", Stderr: "warn"}, []string{
			`{"type":"stdout","text":"a\n",` + stamp + `}`, `{"type":"stdout","text":"b\n",` + stamp + `}`, `{"type":"stderr","text":"warn",` + stamp + `}`,
			`{"type":"number_of_executions","execution_count":7}`, end}},
		{"figures and the main result", protocol.InterpResult{Figures: [][]byte{png}, Result: "3", HasResult: true}, []string{
			`{"type":"result","text":"\u003cFigure\u003e","png":"` + base64.StdEncoding.EncodeToString(png) + `","is_main_result":false}`,
			`{"type":"result","text":"3","is_main_result":true}`,
			`{"type":"number_of_executions","execution_count":7}`, end}},
		{"a string result loses its quotes, as E2B's server strips them", protocol.InterpResult{Result: "'it''s'", HasResult: true}, []string{
			`{"type":"result","text":"it''s","is_main_result":true}`,
			`{"type":"number_of_executions","execution_count":7}`, end}},
		{"an error", protocol.InterpResult{ErrorName: "ValueError", Error: "Traceback (most recent call last):\n  File \"<cell>\", line 1\nValueError: bad: really\n"}, []string{
			`{"type":"error","name":"ValueError","value":"bad: really","traceback":"Traceback (most recent call last):\n  File \"\u003ccell\u003e\", line 1\nValueError: bad: really\n"}`,
			`{"type":"number_of_executions","execution_count":7}`, end}},
		{"an error without a message, and a note", protocol.InterpResult{ErrorName: "KeyboardInterrupt", Error: "Traceback ...\nKeyboardInterrupt", TimedOut: true, Message: "timed out"}, []string{
			`{"type":"stderr","text":"sandgate: timed out\n",` + stamp + `}`,
			`{"type":"error","name":"KeyboardInterrupt","value":"","traceback":"Traceback ...\nKeyboardInterrupt"}`,
			`{"type":"number_of_executions","execution_count":7}`, end}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ev := range cellEvents(tt.res, 7, at) {
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

func TestCompleteUTF8(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, complete, tail string }{
		{"plain\n", "plain\n", ""},
		{"caf\xc3", "caf", "\xc3"},
		{"caf\xc3\xa9", "caf\xc3\xa9", ""},
		{"\xe2\x82", "", "\xe2\x82"},
		{"x\xf0\x9f\x98", "x", "\xf0\x9f\x98"},
		{"\xff\xfe", "\xff\xfe", ""}, // not UTF-8 at all: nothing to wait for
	} {
		c, tail := completeUTF8([]byte(tt.in))
		if string(c) != tt.complete || string(tail) != tt.tail {
			t.Errorf("completeUTF8(%q) = %q, %q; want %q, %q", tt.in, c, tail, tt.complete, tt.tail)
		}
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
