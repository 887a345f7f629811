package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEncodeSplices: a frame encoded with its params or result spliced in
// decodes to the frame json.Marshal would have written.
func TestEncodeSplices(t *testing.T) {
	params := WriteRequest{Path: "a\nb", Content: "x\"y\u2028", Mode: 0o644}
	frame, err := EncodeRequest(Request{ID: 7, Op: OpFileWrite}, params)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := json.Unmarshal(frame, &got); err != nil {
		t.Fatalf("%s: %v", frame, err)
	}
	wantParams, _ := json.Marshal(params)
	if got.ID != 7 || got.Op != OpFileWrite || string(got.Params) != string(wantParams) {
		t.Fatalf("request %s decodes to %+v", frame, got)
	}
	if frame, _ = EncodeRequest(Request{ID: 8, Op: OpInfo}, nil); string(frame) != `{"id":8,"op":"info"}` {
		t.Fatalf("request without params: %s", frame)
	}

	for _, tc := range []struct {
		ev     Event
		result any
		want   string
	}{
		{Event{ID: 1, Type: EventEnd}, ReadResult{Path: "p", Size: 3}, `{"path":"p","encoding":"","size":3,"offset":0,"bytes":0,"eof":false}`},
		{Event{ID: 2, Type: EventEnd, Result: json.RawMessage(`{}`)}, json.RawMessage(`{}`), `{}`},
		{Event{ID: 3, Type: EventStdout, Data: []byte("out")}, nil, ``},
		{Event{ID: 4, Type: EventEnd, Error: &Error{Code: CodeInvalid, Message: "m"}}, json.RawMessage(nil), ``},
	} {
		frame, err := EncodeEvent(tc.ev, tc.result)
		if err != nil {
			t.Fatal(err)
		}
		var ev Event
		if err := Unmarshal(frame, &ev); err != nil {
			t.Fatalf("%s: %v", frame, err)
		}
		if string(ev.Result) != tc.want {
			t.Errorf("event %d: result %s, want %s", tc.ev.ID, ev.Result, tc.want)
		}
		ev.Result, tc.ev.Result = nil, nil
		if !reflect.DeepEqual(ev, tc.ev) {
			t.Errorf("event %d: %s decodes to %+v", tc.ev.ID, frame, ev)
		}
	}
}
