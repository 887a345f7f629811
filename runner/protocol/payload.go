package protocol

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/coder/websocket"
)

// Payloads. A request or an event may carry bytes beside its JSON: a
// file's content, which in a JSON string would be escaped by one side and
// unescaped by the other, about 60 ms of CPU for each 8 MiB. Such a frame
// travels as one binary websocket message:
//
//	4 bytes   n, big-endian: the length of the JSON frame
//	4 bytes   m, big-endian: the length of the payload
//	n bytes   the frame, exactly as a text message would carry it
//	m bytes   the payload (Request.Payload or Event.Payload)
//
// The lengths come first so that the reader allocates the message once,
// at its size, instead of growing a buffer by doubling.
//
// A runner that understands payloads says so in its upgrade response
// (FeaturesHeader lists FeaturePayload). The gateway sends payloads, and
// asks for them (ReadRequest.Raw), only to such a runner, so a gateway
// and a runner of different builds still talk, over JSON alone.
const (
	FeaturesHeader = "Sandgate-Features"
	FeaturePayload = "payload"
	// FeatureOutputWait: process.output honours WaitMs.
	FeatureOutputWait = "output-wait"
	// FeatureAppend: file.write honours Append. A runner without it
	// would ignore the field and replace the file, so the gateway never
	// sends Append to one.
	FeatureAppend = "append"
)

// PayloadMinBytes is the size from which content is worth a payload.
// Below it the JSON's escaping costs microseconds, and a text message is
// one websocket frame where a binary one is two: file.read answers small
// content in Content even when asked for Raw, and the gateway sends small
// writes in the parameters.
const PayloadMinBytes = 64 << 10

// payloadHeaderBytes is the length prefix of a binary message.
const payloadHeaderBytes = 8

// HasFeature reports whether the comma-separated list header names
// feature.
func HasFeature(header, feature string) bool {
	for f := range strings.SplitSeq(header, ",") {
		if strings.TrimSpace(f) == feature {
			return true
		}
	}
	return false
}

// ErrMalformed marks a binary message whose length prefix does not match
// its contents: a peer that does not speak the protocol, which the reader
// should close the connection on.
var ErrMalformed = errors.New("malformed binary message")

// ReadMessage reads the next message: a text message is a frame alone,
// a binary message a frame and its payload (never nil, even when empty:
// nil means none). The connection's read limit bounds both kinds.
func ReadMessage(ctx context.Context, conn *websocket.Conn) (frame, payload []byte, err error) {
	typ, r, err := conn.Reader(ctx)
	if err != nil {
		return nil, nil, err
	}
	if typ == websocket.MessageText {
		frame, err = io.ReadAll(r)
		return frame, nil, err
	}
	var head [payloadHeaderBytes]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, short(err, "binary message without its length prefix")
	}
	n, m := binary.BigEndian.Uint32(head[:4]), binary.BigEndian.Uint32(head[4:])
	if uint64(n)+uint64(m) > MaxFrameBytes {
		return nil, nil, fmt.Errorf("%w: it says it holds %d bytes, above the %d byte limit", ErrMalformed, uint64(n)+uint64(m), MaxFrameBytes)
	}
	buf := make([]byte, int(n)+int(m))
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, nil, short(err, fmt.Sprintf("binary message shorter than its length prefix says (%d + %d bytes)", n, m))
	}
	if k, _ := r.Read(head[:1]); k != 0 {
		return nil, nil, fmt.Errorf("%w: longer than its length prefix says (%d + %d bytes)", ErrMalformed, n, m)
	}
	return buf[:n:n], buf[n:], nil
}

// short describes a read that ended early: the message ended (malformed)
// or the connection failed (err as it is).
func short(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s", ErrMalformed, what)
	}
	return err
}

// WritePayload writes frame and payload as one binary message. The
// payload is not copied into a new buffer first: the message goes out as
// two websocket frames of one message.
func WritePayload(ctx context.Context, conn *websocket.Conn, frame, payload []byte) error {
	w, err := conn.Writer(ctx, websocket.MessageBinary)
	if err != nil {
		return err
	}
	head := make([]byte, payloadHeaderBytes, payloadHeaderBytes+len(frame))
	binary.BigEndian.PutUint32(head, uint32(len(frame)))
	binary.BigEndian.PutUint32(head[4:], uint32(len(payload)))
	if _, err := w.Write(append(head, frame...)); err != nil {
		w.Close()
		return err
	}
	if _, err := w.Write(payload); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
