package mcpws

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// recorder is a sink that keeps what frames sends.
type recorder struct {
	sent   []string
	closed websocket.StatusCode
}

func (r *recorder) send(msg []byte)                                { r.sent = append(r.sent, string(msg)) }
func (r *recorder) close(code websocket.StatusCode, reason string) { r.closed = code }
func (r *recorder) context() context.Context                       { return context.Background() }
func (r *recorder) initialized(session, version string)            {}

// TestFramesSSE: an SSE answer is sent on event by event whatever the
// sizes of the handler's writes (here every split of the stream into
// two writes, and one byte at a time), with multi-line data joined and
// comments and keep-alives dropped.
func TestFramesSSE(t *testing.T) {
	stream := ": keep-alive\n\nevent: message\nid: 1\ndata: {\"a\":1}\n\n" +
		"event: message\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n" + "data: {\"c\":3}\n\n"
	want := []string{`{"a":1}`, "{\"b\":\n2}", `{"c":3}`}
	write := func(chunks ...string) []string {
		rec := &recorder{}
		f := &frames{to: rec}
		f.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			if _, err := f.Write([]byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		return rec.sent
	}
	for i := range len(stream) + 1 {
		if got := write(stream[:i], stream[i:]); !slices.Equal(got, want) {
			t.Fatalf("split at %d: sent %q, want %q", i, got, want)
		}
	}
	var bytewise []string
	for _, c := range stream {
		bytewise = append(bytewise, string(c))
	}
	if got := write(bytewise...); !slices.Equal(got, want) {
		t.Fatalf("a byte at a time: sent %q, want %q", got, want)
	}
}

// TestFramesFinish: a JSON answer is sent as it is; a refusal of a
// request without a JSON-RPC body becomes a JSON-RPC error to its id
// that says what the edge said; an accepted notification sends nothing;
// a 401 closes the connection.
func TestFramesFinish(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		id     string
		want   string // a substring of the one message sent; "" none
		closed websocket.StatusCode
	}{
		{"a JSON result", 200, `{"jsonrpc":"2.0","id":"7","result":{}}`, `"7"`, `"result":{}`, 0},
		{"a scope refusal", 403, "insufficient scope: needs sandbox:exec", `"8"`, `"id":"8","error":{"code":-32600,"message":"Forbidden: insufficient scope: needs sandbox:exec`, 0},
		{"an accepted notification", 202, "", "", "", 0},
		{"a token no longer accepted", 401, "expired", `"9"`, "", websocket.StatusPolicyViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			f := &frames{to: rec}
			f.WriteHeader(tc.status)
			_, _ = f.Write([]byte(tc.body))
			f.finish(rpcHead{ID: []byte(tc.id), Method: "x"})
			switch {
			case tc.want == "" && len(rec.sent) != 0:
				t.Fatalf("sent %q, want nothing", rec.sent)
			case tc.want != "" && (len(rec.sent) != 1 || !strings.Contains(rec.sent[0], tc.want)):
				t.Fatalf("sent %q, want one message with %s", rec.sent, tc.want)
			case rec.closed != tc.closed:
				t.Fatalf("closed with %v, want %v", rec.closed, tc.closed)
			}
		})
	}
}

// FuzzEventData: any bytes parse without a panic, and one data line
// comes back as it was.
func FuzzEventData(f *testing.F) {
	f.Add([]byte("data: {}"))
	f.Add([]byte("event: message\ndata: a\ndata: b\r\n: c"))
	f.Fuzz(func(t *testing.T, event []byte) {
		_ = eventData(event)
		if bytes.ContainsAny(event, "\r\n") {
			return
		}
		if got := eventData(append([]byte("data: "), event...)); !bytes.Equal(got, event) {
			t.Fatalf("data line %q parsed as %q", event, got)
		}
	})
}
