package protocol

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/coder/websocket"
)

// Payloads. A request or an event may carry bytes beside its JSON: a
// file's content, which in a JSON string would be escaped by one side and
// unescaped by the other, about 60 ms of CPU for each 8 MiB. Such a frame
// travels as one binary websocket message:
//
//	4 bytes   n, big-endian: the length of the JSON frame
//	n bytes   the frame, exactly as a text message would carry it
//	the rest  the payload (Request.Payload or Event.Payload)
//
// A runner that understands payloads says so in its upgrade response
// (FeaturesHeader lists FeaturePayload). The gateway sends payloads, and
// asks for them (ReadRequest.Raw), only to such a runner, so a gateway
// and a runner of different builds still talk, over JSON alone.
const (
	FeaturesHeader = "Sandgate-Features"
	FeaturePayload = "payload"
)

// payloadHeaderBytes is the length prefix of a binary message.
const payloadHeaderBytes = 4

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

// SplitPayload splits a binary message into its JSON frame and payload.
// Both alias msg.
func SplitPayload(msg []byte) (frame, payload []byte, err error) {
	if len(msg) < payloadHeaderBytes {
		return nil, nil, fmt.Errorf("binary message of %d bytes is shorter than its %d-byte length prefix", len(msg), payloadHeaderBytes)
	}
	n := binary.BigEndian.Uint32(msg)
	if uint64(n) > uint64(len(msg)-payloadHeaderBytes) {
		return nil, nil, fmt.Errorf("binary message says its frame is %d bytes but only %d follow", n, len(msg)-payloadHeaderBytes)
	}
	rest := msg[payloadHeaderBytes:]
	// A payload is never nil, even when empty: nil means "no payload".
	return rest[:n], rest[n:len(rest):len(rest)], nil
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
