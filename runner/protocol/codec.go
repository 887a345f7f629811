package protocol

import (
	"bytes"
	"encoding/json"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Frames can carry megabytes (a file's content), so their coding is on
// every large call's path. Two things keep it to one pass each way:
//
//   - A frame's params or result is encoded once and spliced into the
//     frame (appendRaw), rather than handed to json.Marshal as a
//     json.RawMessage, which would validate and compact it again.
//   - Frames are decoded with go-json-experiment's v1 package: the
//     semantics of encoding/json (it passes encoding/json's tests) at about
//     four times its speed on long strings.

// Unmarshal decodes JSON as encoding/json.Unmarshal does, faster.
func Unmarshal(data []byte, v any) error { return jsonv1.Unmarshal(data, v) }

// EncodeRequest encodes req with params (which may be nil) as its Params.
func EncodeRequest(req Request, params any) ([]byte, error) {
	req.Params = nil
	return encodeWith(req, "params", params)
}

// EncodeEvent encodes ev with result (which may be nil) as its Result.
func EncodeEvent(ev Event, result any) ([]byte, error) {
	ev.Result = nil
	return encodeWith(ev, "result", result)
}

// encodeWith encodes frame (whose member name is empty and omitted) and
// adds member name holding member encoded once. A nil member, or an empty
// json.RawMessage, is left out. A large member is copied once, from the
// encoder into the frame.
func encodeWith(frame any, name string, member any) ([]byte, error) {
	head, err := json.Marshal(frame)
	if err != nil || member == nil {
		return head, err
	}
	if raw, ok := member.(json.RawMessage); ok {
		if len(raw) == 0 {
			return head, nil
		}
		return appendRaw(head, name, raw), nil
	}
	var out bytes.Buffer
	out.Write(head[:len(head)-1])
	if len(head) > 2 {
		out.WriteByte(',')
	}
	out.WriteString(`"` + name + `":`)
	// json.Encoder escapes as json.Marshal does, and ends with a newline
	// that the closing brace replaces.
	if err := json.NewEncoder(&out).Encode(member); err != nil {
		return nil, err
	}
	b := out.Bytes()
	b[len(b)-1] = '}'
	return b, nil
}

// appendRaw adds "name": raw as the last member of the encoded object
// head. raw must be valid JSON: it comes from json.Marshal.
func appendRaw(head []byte, name string, raw []byte) []byte {
	out := make([]byte, 0, len(head)+len(name)+len(raw)+4)
	out = append(out, head[:len(head)-1]...)
	if len(head) > 2 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, '"', ':')
	out = append(out, raw...)
	return append(out, '}')
}
