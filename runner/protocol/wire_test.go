package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

func TestEventRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ev   protocol.Event
	}{
		{"binary chunk", protocol.Event{ID: 7, Type: protocol.EventStdout, Data: []byte{0, 0xff, '\n', 0xc3}}},
		{"stderr", protocol.Event{ID: 1, Type: protocol.EventStderr, Data: []byte("x")}},
		{"result", protocol.Event{ID: 2, Type: protocol.EventEnd, Result: json.RawMessage(`{"exit_code":0}`)}},
		{"error", protocol.Event{ID: 3, Type: protocol.EventEnd, Error: protocol.Errorf(protocol.CodeNotFound, "read %s: no such file", "/x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			var got protocol.Event
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.ev) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tt.ev)
			}
		})
	}
}

func TestCodeOf(t *testing.T) {
	t.Parallel()
	if got := protocol.CodeOf(protocol.Errorf(protocol.CodeNoMatch, "x")); got != protocol.CodeNoMatch {
		t.Fatalf("CodeOf = %q", got)
	}
	if got := protocol.CodeOf(bytes.ErrTooLarge); got != protocol.CodeInternal {
		t.Fatalf("CodeOf(foreign error) = %q, want internal", got)
	}
}

// FuzzFrames decodes arbitrary bytes as request and event frames: decoding
// never panics, and whatever decodes re-encodes to something that decodes
// to the same value.
func FuzzFrames(f *testing.F) {
	f.Add([]byte(`{"id":1,"op":"exec","params":{"command":"echo hi"}}`))
	f.Add([]byte(`{"id":2,"type":"stdout","data":"aGkK"}`))
	f.Add([]byte(`{"id":3,"type":"end","error":{"code":"not_found","message":"x"}}`))
	f.Add([]byte(`{"id":18446744073709551615,"op":"cancel","params":{"target":1}}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var req protocol.Request
		if json.Unmarshal(frame, &req) == nil {
			again := roundTrip(t, req)
			if again.ID != req.ID || again.Op != req.Op {
				t.Fatalf("request changed in round trip: %+v vs %+v", req, again)
			}
		}
		var ev protocol.Event
		if json.Unmarshal(frame, &ev) == nil {
			again := roundTrip(t, ev)
			if again.ID != ev.ID || again.Type != ev.Type || !bytes.Equal(again.Data, ev.Data) {
				t.Fatalf("event changed in round trip: %+v vs %+v", ev, again)
			}
		}
	})
}

func roundTrip[T any](t *testing.T, v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode re-encoded %s: %v", b, err)
	}
	return out
}
