package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/sandgate/sandgate/runner/protocol"
)

// TestPayloadsCarryFileContent writes and reads files whose content goes
// as the frame's payload, text and binary, through a real runner.
func TestPayloadsCarryFileContent(t *testing.T) {
	t.Parallel()
	d, ws := startRunner(t)
	c := dial(t, d)
	if !c.Payloads() {
		t.Fatal("the runner does not advertise payloads")
	}
	binary := make([]byte, 3<<20)
	rand.Read(binary)
	text := []byte(strings.Repeat("héllo \"quoted\" \\ line\n", 1<<15))
	for _, tt := range []struct {
		name, encoding string
		data           []byte
	}{
		{"text", "", text},
		{"binary", "base64", binary},
		{"small binary", "base64", []byte{0, 1, 0xff}},
		{"empty", "", []byte{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			content := tt.data
			if tt.encoding == protocol.EncodingBase64 {
				content = []byte(base64.StdEncoding.EncodeToString(tt.data))
			}
			var wr protocol.WriteResult
			if _, err := c.CallPayload(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: tt.name, Encoding: tt.encoding}, content, &wr); err != nil {
				t.Fatalf("write: %v", err)
			}
			if wr.Bytes != int64(len(tt.data)) {
				t.Fatalf("wrote %d bytes, want %d", wr.Bytes, len(tt.data))
			}
			if on, err := os.ReadFile(filepath.Join(ws, tt.name)); err != nil || !bytes.Equal(on, tt.data) {
				t.Fatalf("file on disk differs from what was sent (%v)", err)
			}
			var rr protocol.ReadResult
			got, err := c.CallPayload(t.Context(), protocol.OpFileRead, protocol.ReadRequest{Path: tt.name, Raw: true}, nil, &rr)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if len(tt.data) < protocol.PayloadMinBytes {
				// Small content is not worth a payload: it comes in Content.
				if got != nil || rr.Content != string(content) {
					t.Fatalf("small read: payload %d bytes, content %q; want no payload and %q", len(got), rr.Content, content)
				}
			} else if !bytes.Equal(got, tt.data) || rr.Content != "" || rr.Bytes != int64(len(tt.data)) {
				t.Fatalf("read %d bytes (result %+v), want the %d written", len(got), rr, len(tt.data))
			}
			if want := map[bool]string{true: "text", false: "base64"}[tt.encoding == ""]; rr.Encoding != want {
				t.Fatalf("encoding %q, want %q", rr.Encoding, want)
			}
		})
	}
}

// TestPayloadRefusals: a payload where none belongs, or beside content in
// the parameters, is refused with a message, and the connection lives on.
func TestPayloadRefusals(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	c := dial(t, d)
	_, err := c.CallPayload(t.Context(), protocol.OpFileStat, protocol.PathRequest{Path: "."}, []byte("x"), nil)
	if protocol.CodeOf(err) != protocol.CodeInvalid || !strings.Contains(err.Error(), "takes no payload") {
		t.Fatalf("payload to file.stat: %v", err)
	}
	_, err = c.CallPayload(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: "a", Content: "x"}, []byte("y"), nil)
	if protocol.CodeOf(err) != protocol.CodeInvalid || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("payload and content: %v", err)
	}
	if err := c.Call(t.Context(), protocol.OpInfo, nil, nil); err != nil {
		t.Fatalf("the connection did not survive refusals: %v", err)
	}
}

// TestMalformedBinaryMessageClosesTheConnection: a binary message whose
// length prefix does not match its contents is a protocol error, not
// something to guess at.
func TestMalformedBinaryMessageClosesTheConnection(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d(ctx) }}}
	for _, tt := range []struct {
		name string
		msg  []byte
	}{
		{"no prefix", []byte{0, 0, 1}},
		{"shorter than it says", []byte{0, 0, 1, 0, 0, 0, 0, 0, '{', '}'}},
		{"longer than it says", []byte{0, 0, 0, 2, 0, 0, 0, 1, '{', '}', 'x', 'y'}},
		{"above the frame limit", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, _, err := websocket.Dial(t.Context(), "ws://runner"+protocol.Path, &websocket.DialOptions{
				HTTPClient: hc, HTTPHeader: http.Header{protocol.VersionHeader: []string{"1"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			if err := conn.Write(t.Context(), websocket.MessageBinary, tt.msg); err != nil {
				t.Fatal(err)
			}
			_, _, err = conn.Read(t.Context())
			if websocket.CloseStatus(err) != websocket.StatusProtocolError {
				t.Fatalf("got %v, want a protocol-error close", err)
			}
		})
	}
}

// TestOldRunnerGetsJSON: a runner that does not advertise payloads (an
// older build, still running in a sandbox across a gateway upgrade) is
// spoken to in JSON alone, and a payload is never sent to it.
func TestOldRunnerGetsJSON(t *testing.T) {
	t.Parallel()
	d, _ := startRunnerWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(withoutFeatures{w}, r)
		})
	})
	c := dial(t, d)
	if c.Payloads() {
		t.Fatal("Payloads() is true for a runner that did not advertise them")
	}
	_, err := c.CallPayload(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: "a"}, []byte("x"), nil)
	if protocol.CodeOf(err) != protocol.CodeUnsupported {
		t.Fatalf("payload to an old runner: %v", err)
	}
	var rr protocol.ReadResult
	if err := c.Call(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: "a", Content: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(t.Context(), protocol.OpFileRead, protocol.ReadRequest{Path: "a"}, &rr); err != nil || rr.Content != "x" {
		t.Fatalf("JSON read: %+v %v", rr, err)
	}
}

// withoutFeatures hides the runner's features header, as an older runner
// would send none.
type withoutFeatures struct{ http.ResponseWriter }

func (w withoutFeatures) WriteHeader(code int) {
	w.Header().Del(protocol.FeaturesHeader)
	w.ResponseWriter.WriteHeader(code)
}

func (w withoutFeatures) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
